-- 0014: the provider seat of a provider queue's match.
--
-- A provider queue matches one requester to a provider (a user with
-- capacity) rather than to other players: the match has one player and this
-- seat, {"userId": …, "score": …, "parts": {"specialty": 0.4, …}}, the
-- provider, the score that chose them and each term's contribution. NULL
-- for every other match. A column of its own, written after commit_matches
-- in the same transaction, so that 0010's function and the many matches
-- without a provider stay as they are.
ALTER TABLE matches ADD COLUMN provider jsonb;

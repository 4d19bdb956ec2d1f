-- 0015: the offers each ticket's requester was refused, by ticket.
--
-- A requester whose offer a provider declined or let expire goes back to
-- the line and must go to the next best provider, not to the same one
-- again: each provider queue's pass asks, for the requesters it read,
-- which providers refused them (provider.Record.Refused).
CREATE INDEX assignments_refused ON assignments (ticket_id)
    WHERE status IN ('DECLINED', 'EXPIRED');

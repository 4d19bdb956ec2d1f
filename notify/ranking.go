package notify

import "context"

// RankingChannel is the pub/sub channel of one ranking board's window: the
// rankings Service announces there each change of its Top N
// ({"board","window","period","weightsVersion"}), and each gateway reads
// the Top once for its subscribed sockets (ARCHITECTURE.md §8).
func RankingChannel(prefix, board, window string) string {
	return channel(prefix, "ranking", board+":"+window)
}

// SubscribeRanking registers deliver for a ranking board's window's
// channel (see RankingChannel), as Subscribe does for a user's.
func (h *Hub) SubscribeRanking(ctx context.Context, board, window string, deliver func([]byte)) (func(), error) {
	return h.subscribe(ctx, RankingChannel(h.cfg.Prefix, board, window), "ranking "+board+" "+window, deliver)
}

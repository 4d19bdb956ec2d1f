package admission

import "context"

// Estimate is the position of a waiter at rank (zero-based) of total in
// queue, with the ETA of the queue's measured rate: the gateway's pushes
// between exact reads (ARCHITECTURE.md §10). An unknown queue gives the
// zero Position.
func (s *Service) Estimate(ctx context.Context, queue string, rank, total int64) Position {
	q, err := s.queue(queue)
	if err != nil {
		return Position{}
	}
	eta := s.ratesAhead(ctx, q, s.cfg.Now()).Predict(rank)
	return Position{Status: StatusWaiting, Rank: rank, Total: total, ETA: eta, PollAfter: pollAfter(eta, q)}
}

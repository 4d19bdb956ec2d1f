package main

import (
	"crypto/rand"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/admission/line"
	"github.com/matchgate/matchgate/admission/record"
	"github.com/matchgate/matchgate/matcher"
)

// admissionQueues are the queue file's queues of kind admission.
func admissionQueues(c matcher.Config) []admission.Queue {
	var out []admission.Queue
	for _, q := range c.Queues {
		if q.Kind != matcher.KindAdmission {
			continue
		}
		out = append(out, admission.Queue{Name: q.Name, Rate: q.Rate, TokenTTL: q.TokenTTL, AbandonAfter: q.AbandonAfter})
	}
	return out
}

// openAdmission builds the admission Service on the record (PostgreSQL
// beside the matchmaking record, or memory) and the line in Redis; nil
// when the queue file has no admission queue.
func (d *deps) openAdmission() error {
	qs := admissionQueues(d.queues)
	if len(qs) == 0 {
		return nil
	}
	var rec admission.Record = record.NewMemory()
	if d.pg != nil {
		rec = record.NewPostgres(d.pg)
	}
	d.admRecord, d.admLine = rec, line.NewRedis(d.rdb, d.f.prefix)
	svc, err := admission.NewService(admission.ServiceConfig{Queues: qs, Record: rec, Line: d.admLine, Now: d.clk.Now, Logger: d.log})
	if err != nil {
		return err
	}
	d.adm = svc
	return nil
}

// admitterTasks are the admitters of the matcher role, one per admission
// queue; of all processes running them, the holder of a queue's lease
// admits.
func admitterTasks(d *deps) ([]task, error) {
	var tasks []task
	for _, q := range admissionQueues(d.queues) {
		a, err := admission.NewAdmitter(admission.AdmitterConfig{
			Queue: q, Record: d.admRecord, Line: d.admLine,
			Owner: d.node + "-" + rand.Text()[:8], LeaseTTL: d.f.leaseTTL,
			Now: d.clk.Now, Logger: d.log,
		})
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, task{"admitter " + q.Name, a.Run})
	}
	return tasks, nil
}

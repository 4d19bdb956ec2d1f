package main

import (
	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/admission/line"
	"github.com/matchgate/matchgate/admission/record"
	"github.com/matchgate/matchgate/matcher"
	"github.com/matchgate/matchgate/notify"
)

// admissionQueues are the queues of kind admission of c.
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
// beside the matchmaking record, or memory) and the line in Redis, and
// registers its metrics. It is built whether or not an admission queue is
// in force at start: the admin API may create one at any time.
func (d *deps) openAdmission() error {
	var rec admission.Record = record.NewMemory()
	if d.pg != nil {
		rec = record.NewPostgres(d.pg)
	}
	// The Service and the admitters share the counted record: the tokens'
	// outcomes and the admissions are counted where they are decided.
	d.admRecord, d.admLine = admission.NewMetrics(d.reg).Record(rec), line.NewRedis(d.rdb, d.f.prefix)
	svc, err := admission.NewService(admission.ServiceConfig{Queues: admissionQueues(d.queues), Record: d.admRecord, Line: d.admLine, Now: d.clk.Now, Logger: d.log})
	if err != nil {
		return err
	}
	d.adm = svc
	d.reg.MustRegister(admission.NewCollector(svc.Queues))
	return nil
}

// admitterTasks are the matcher role's admitters: one per admission queue
// in force, started and stopped as queues are created and retired through
// the admin API (applyAdmission); of all processes running them, the
// holder of a queue's lease admits.
func admitterTasks(d *deps) ([]task, error) {
	s, err := admission.NewSupervisor(admission.SupervisorConfig{
		Record: d.admRecord, Line: d.admLine, Owner: d.node,
		LeaseTTL: d.f.leaseTTL, Now: d.clk.Now, Logger: d.log,
		Announce: notify.NewAnnouncer(notify.AnnouncerConfig{Redis: d.rdb, Prefix: d.f.prefix, Logger: d.log, Metrics: d.nmetrics}),
	}, admissionQueues(d.queues))
	if err != nil {
		return nil, err
	}
	d.admitters = s
	return []task{{"admitters", s.Run}}, nil
}

// applyAdmission puts the admission queues of a queue change in force in
// this process: the Service at once, the admitters at their next pass.
func (d *deps) applyAdmission(c matcher.Config) {
	qs := admissionQueues(c)
	if err := d.adm.SetQueues(qs); err != nil {
		d.log.Error("apply admission queues to the service", "err", err)
	}
	if d.admitters != nil {
		if err := d.admitters.SetQueues(qs); err != nil {
			d.log.Error("apply admission queues to the admitters", "err", err)
		}
	}
}

package main

import (
	"context"
	"errors"

	"github.com/matchgate/matchgate/admission"
	"github.com/matchgate/matchgate/matcher/engine"
)

// admissionGate is the engine's AdmissionGate on this process's admission
// Service, looked up at each call: openAdmission builds the Service after
// the engine's, and none when the queue file has no admission queue.
type admissionGate struct{ d *deps }

var (
	_ engine.AdmissionGate = admissionGate{}
	_ engine.AdmissionGate = (*admission.Gate)(nil)
)

// notServed refuses a join behind an admission queue this process does
// not serve (yet): one put through the admin API that its admission
// Service has not taken in.
type notServed struct{ queue string }

func (e notServed) Error() string {
	return "admission: this process does not serve the admission queue " + e.queue
}

// NotAdmitted makes it an engine.AdmissionRefusal.
func (e notServed) NotAdmitted() string { return "this server does not serve it yet" }

func (g admissionGate) gate(queue string) (*admission.Gate, error) {
	if g.d.adm == nil {
		return nil, notServed{queue}
	}
	return g.d.adm.Gate(), nil
}

// Claim implements engine.AdmissionGate.
func (g admissionGate) Claim(ctx context.Context, queue, userID string) (string, error) {
	gate, err := g.gate(queue)
	if err != nil {
		return "", err
	}
	token, err := gate.Claim(ctx, queue, userID)
	if errors.Is(err, admission.ErrUnknownQueue) {
		return "", notServed{queue}
	}
	return token, err
}

// Consume implements engine.AdmissionGate.
func (g admissionGate) Consume(ctx context.Context, queue, token string) error {
	gate, err := g.gate(queue)
	if err != nil {
		return err
	}
	return gate.Consume(ctx, queue, token)
}

// Release implements engine.AdmissionGate.
func (g admissionGate) Release(ctx context.Context, queue, token string) error {
	gate, err := g.gate(queue)
	if err != nil {
		return err
	}
	return gate.Release(ctx, queue, token)
}

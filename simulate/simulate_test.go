package simulate

import (
	"bytes"
	"context"
	"testing"
)

func runFile(t *testing.T, path string, seed *uint64) *Report {
	t.Helper()
	sc, err := ReadScenario(path)
	if err != nil {
		t.Fatal(err)
	}
	if seed != nil {
		sc.Seed = *seed
	}
	rep, err := Run(context.Background(), sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestSimulateSmoke(t *testing.T) {
	rep := runFile(t, "testdata/windows.yaml", nil)
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
}

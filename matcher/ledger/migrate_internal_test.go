package ledger

import (
	"testing"
	"testing/fstest"
)

func TestReadMigrationsOrdersByVersion(t *testing.T) {
	got, err := readMigrations(fstest.MapFS{
		"0010_later.sql": {Data: []byte("SELECT 10")},
		"0002_next.sql":  {Data: []byte("SELECT 2")},
		"0001_init.sql":  {Data: []byte("SELECT 1")},
		"README.md":      {Data: []byte("not a migration")},
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range got {
		names = append(names, m.name)
	}
	if len(got) != 3 || got[0].version != 1 || got[1].version != 2 || got[2].version != 10 || got[2].sql != "SELECT 10" {
		t.Fatalf("read %v", names)
	}
}

func TestReadMigrationsRefusesBadNames(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"no number":      {"init.sql": {}},
		"zero":           {"0000_init.sql": {}},
		"shared version": {"0001_a.sql": {}, "001_b.sql": {}},
	} {
		if _, err := readMigrations(fsys); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

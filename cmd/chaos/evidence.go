package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// ticketView describes what Redis holds of a ticket (the pool layout of
// matcher/pool/doc.go: <prefix>:{<queue>:<region>}:…), so that a ticket
// stuck WAITING comes with the evidence of why: absent from the pool, or a
// hash left "claimed" for a match the record never got.
func (d *deps) ticketView(ctx context.Context, t *dbTicket, matches []*dbMatch) string {
	part := d.prefix + ":{" + t.Queue + ":" + t.Region + "}:"
	h, err := d.rdb.HGetAll(ctx, part+"t:"+t.ID).Result()
	if err != nil {
		return "unreadable: " + err.Error()
	}
	var parts []string
	if len(h) == 0 {
		parts = append(parts, "no ticket hash")
	} else {
		keys := make([]string, 0, len(h))
		for k := range h {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var fields []string
		for _, k := range keys {
			fields = append(fields, k+"="+h[k])
		}
		parts = append(parts, "hash {"+strings.Join(fields, " ")+"}")
		if ttl, err := d.rdb.PTTL(ctx, part+"t:"+t.ID).Result(); err == nil {
			parts = append(parts, fmt.Sprintf("hash TTL %s", ttl.Round(1e9)))
		}
		if mid := h["match"]; mid != "" {
			found := false
			for _, m := range matches {
				if m.ID == mid {
					found = true
					break
				}
			}
			if !found {
				parts = append(parts, "claimed for match "+mid+", which the record does not have")
			}
		}
	}
	// The sets name a ticket by the member its hash keeps (or, in a layout
	// before members carried the fields, by its bare id).
	m := h["m"]
	if m == "" {
		m = t.ID
	}
	for _, set := range []string{"pool", "watch"} {
		_, err := d.rdb.ZScore(ctx, part+set, m).Result()
		state := "member"
		if err != nil {
			state = "absent"
		}
		parts = append(parts, set+" "+state)
	}
	return strings.Join(parts, "; ")
}

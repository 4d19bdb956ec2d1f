package pool

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/matchgate/matchgate/provider"
)

// emptyAttrs is the JSON of the zero attributes, what a provider created
// by Sync holds until it comes online.
var emptyAttrs = func() string {
	b, err := json.Marshal(provider.Attributes{})
	if err != nil {
		panic(err) // a fixed value of a plain struct
	}
	return string(b)
}()

// build is a provider as both implementations return it: attributes
// decoded from their stored JSON (so both agree value for value), held
// sorted, online judged at now by the millisecond, last seen in UTC.
func build(queue, user string, capacity int, attrs []byte, until, seen int64, on bool, held []string, now time.Time) (provider.Provider, error) {
	p := provider.Provider{
		UserID:   user,
		Queue:    queue,
		Capacity: capacity,
		Used:     len(held),
		Online:   on && until > now.UnixMilli(),
		Held:     held,
		LastSeen: fromMs(seen),
	}
	slices.Sort(p.Held)
	a, err := decodeAttrs(attrs)
	if err != nil {
		return provider.Provider{}, fmt.Errorf("attributes of %s: %w", user, err)
	}
	p.Attributes = a
	return p, nil
}

// attrsCache holds decoded attributes by their JSON: a provider queue's
// pass reads every provider each time, and decoding the same attributes
// again was two fifths of a pass over 1,000 providers. Bounded: emptied
// when it holds attrsCacheMax.
var attrsCache struct {
	sync.Mutex
	m map[string]provider.Attributes
}

const attrsCacheMax = 50_000

// decodeAttrs decodes stored attributes, the lists copied so no two
// providers share them.
func decodeAttrs(raw []byte) (provider.Attributes, error) {
	attrsCache.Lock()
	a, ok := attrsCache.m[string(raw)]
	attrsCache.Unlock()
	if !ok {
		if err := json.Unmarshal(raw, &a); err != nil {
			return provider.Attributes{}, err
		}
		attrsCache.Lock()
		if attrsCache.m == nil || len(attrsCache.m) >= attrsCacheMax {
			attrsCache.m = make(map[string]provider.Attributes)
		}
		attrsCache.m[string(raw)] = a
		attrsCache.Unlock()
	}
	a.Languages, a.Specialties, a.SessionTypes = slices.Clone(a.Languages), slices.Clone(a.Specialties), slices.Clone(a.SessionTypes)
	return a, nil
}

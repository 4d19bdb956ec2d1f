package pool

import (
	"encoding/json"
	"fmt"
	"slices"
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
	if err := json.Unmarshal(attrs, &p.Attributes); err != nil {
		return provider.Provider{}, fmt.Errorf("attributes of %s: %w", user, err)
	}
	return p, nil
}

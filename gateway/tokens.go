package gateway

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/matchgate/matchgate/control"
	"github.com/matchgate/matchgate/matcher"
)

// maxTokenBytes bounds a token before it is parsed: real ones are a few
// hundred bytes.
const maxTokenBytes = 4096

// maxKeyIDLen bounds a key id ("kid").
const maxKeyIDLen = 64

// keySet holds the HS256 keys tokens are verified with, for rotation: a
// token that names a key ("kid" header) is verified with that key only; one
// that names none, with the default key (Config.Secret). The algorithm is
// pinned: a key is only ever used as an HS256 key.
type keySet struct {
	def     []byte            // Config.Secret; nil: tokens must name a key
	byKID   map[string][]byte // Config.Keys
	signKID string            // kid of the key that signs, "" for def
	signKey []byte
}

func newKeySet(secret []byte, keys map[string][]byte, signKID string) (keySet, error) {
	k := keySet{byKID: map[string][]byte{}, signKID: signKID}
	if len(secret) > 0 {
		if len(secret) < minSecretBytes {
			return k, fmt.Errorf("gateway: Config.Secret must be at least %d bytes", minSecretBytes)
		}
		k.def = secret
	}
	for kid, key := range keys {
		if kid == "" || len(kid) > maxKeyIDLen || !control.ValidUserID(kid) {
			return k, fmt.Errorf("gateway: key id %q must be 1..%d printable bytes", kid, maxKeyIDLen)
		}
		if len(key) < minSecretBytes {
			return k, fmt.Errorf("gateway: key %q must be at least %d bytes", kid, minSecretBytes)
		}
		k.byKID[kid] = key
	}
	switch {
	case k.def == nil && len(k.byKID) == 0:
		return k, fmt.Errorf("gateway: Config.Secret (at least %d bytes) or Config.Keys is required", minSecretBytes)
	case signKID == "" && k.def == nil:
		return k, errors.New("gateway: Config.SigningKeyID must name one of Config.Keys when there is no Secret")
	case signKID == "":
		k.signKey = k.def
	default:
		key, ok := k.byKID[signKID]
		if !ok {
			return k, fmt.Errorf("gateway: Config.SigningKeyID %q is not in Config.Keys", signKID)
		}
		k.signKey = key
	}
	return k, nil
}

// verifyKey is the jwt.Keyfunc: the key the token names, or the default.
func (k keySet) verifyKey(t *jwt.Token) (any, error) {
	if t.Method != jwt.SigningMethodHS256 {
		return nil, errors.New("token algorithm is not HS256")
	}
	raw, named := t.Header["kid"]
	if !named {
		if k.def == nil {
			return nil, errors.New("token names no key")
		}
		return k.def, nil
	}
	kid, ok := raw.(string)
	if !ok {
		return nil, errors.New("token key id is not a string")
	}
	key, ok := k.byKID[kid]
	if !ok {
		return nil, errors.New("token names an unknown key")
	}
	return key, nil
}

// TokenSpec describes a token to sign.
type TokenSpec struct {
	// Subject is the user id (sub). Required, 1..128 printable bytes.
	Subject string
	// Skill and Activity are the optional claims of the trusted backend.
	Skill, Activity *float64
	// TTL is the lifetime from Now. Required.
	TTL time.Duration
	// Now stamps iat and nbf. Default time.Now.
	Now time.Time
	// KeyID, when set, goes into the "kid" header: the verifier uses the
	// key of that id (Config.Keys) instead of the default one.
	KeyID string
	// Role is the role claim: RoleProvider for a provider queue's
	// providers; "" (no claim) for a player.
	Role string
	// Name is the display name claim, signed as matcher.CleanName leaves
	// it; "" (or nothing left of it): no claim.
	Name string
}

// SignToken signs an HS256 token with key: sub, iat, nbf, exp, and skill,
// activity, role and name when set. A production backend mints tokens of the same
// shape with its own JWT library.
func SignToken(key []byte, spec TokenSpec) (string, error) {
	now := spec.Now
	if now.IsZero() {
		now = time.Now()
	}
	switch {
	case len(key) == 0:
		return "", errors.New("sign token: empty key")
	case !control.ValidUserID(spec.Subject):
		return "", fmt.Errorf("sign token: subject must be 1..%d printable bytes", maxUserIDLen)
	case spec.TTL <= 0:
		return "", errors.New("sign token: ttl must be positive")
	case len(spec.KeyID) > maxKeyIDLen:
		return "", errors.New("sign token: key id too long")
	case spec.Role != "" && spec.Role != RolePlayer && spec.Role != RoleProvider:
		return "", fmt.Errorf("sign token: role %q is neither %s nor %s", spec.Role, RolePlayer, RoleProvider)
	}
	for _, f := range []*float64{spec.Skill, spec.Activity} {
		if f != nil && (math.IsNaN(*f) || math.IsInf(*f, 0)) {
			return "", errors.New("sign token: skill and activity must be finite")
		}
	}
	c := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   spec.Subject,
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(spec.TTL)),
		},
		Skill:    spec.Skill,
		Activity: spec.Activity,
		Role:     spec.Role,
		Name:     matcher.CleanName(spec.Name),
	}
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
	if spec.KeyID != "" {
		t.Header["kid"] = spec.KeyID
	}
	s, err := t.SignedString(key)
	if err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	return s, nil
}

package index

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// DefaultLifetime is how long an intent counts as a write that may
// still be stored. A write is stored within the API server's request
// timeout of its admission or not at all (kcp's --request-timeout, 60s by
// default, bounds the whole request, storage included); the rest is margin
// for clocks that disagree between the webhook's replicas.
const DefaultLifetime = 90 * time.Second

// ClockSkew is how far apart the clocks of kcp (which stamps a rule's
// creation) and of the webhook's replicas (which stamp intents) may be.
// An intent dated more than that before the oldest current rule over its
// dependent type was recorded under a rule since deleted, and is ignored.
const ClockSkew = 5 * time.Second

// Standing reports whether the intent in belongs to rules that stand: one
// of the rules it names (Intent.Rules) is among ruleUIDs, those over its
// dependent type now. An intent that names none, recorded by an older
// webhook, stands unless it is dated more than ClockSkew before since, the
// creation of the oldest current rule over the type. An intent of rules
// since deleted stands for a write no current rule promised to protect,
// and may never be withdrawn: its dependent may have been deleted while no
// index webhook was there to see it.
func Standing(in v1alpha1.Intent, ruleUIDs []string, since time.Time) bool {
	if len(in.Rules) == 0 {
		return !in.At.Time.Before(since.Add(-ClockSkew))
	}
	for _, uid := range in.Rules {
		if slices.Contains(ruleUIDs, uid) {
			return true
		}
	}
	return false
}

// NewToken returns the random token that names the intents of one
// admitted write.
func NewToken() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating an intent token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Key is the annotation key of the intent named token.
func Key(token string) string { return v1alpha1.IntentAnnotationPrefix + token }

// Encode renders an intent as an annotation value.
func Encode(in v1alpha1.Intent) (string, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return "", fmt.Errorf("encoding an intent: %w", err)
	}
	return string(b), nil
}

// LabelValue is the IntentLabel value for the intents named token,
// recorded at at.
func LabelValue(token string, at time.Time) string {
	return token + "." + strconv.FormatInt(at.Unix(), 10)
}

// ParseLabel reads an IntentLabel value.
func ParseLabel(v string) (token string, at time.Time, ok bool) {
	token, secs, found := strings.Cut(v, ".")
	if !found || token == "" {
		return "", time.Time{}, false
	}
	n, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return "", time.Time{}, false
	}
	return token, time.Unix(n, 0), true
}

// Recorded is an intent found on a referenced object.
type Recorded struct {
	Key string
	v1alpha1.Intent
}

// On returns the intents recorded in annotations that are still
// fresh at now, and the keys of those that are not. An intent recorded up to
// a lifetime in the future (a replica whose clock runs ahead) counts as
// fresh; one that cannot be read, or claims a time further ahead, was not
// written by the webhook and counts as expired.
func On(annotations map[string]string, now time.Time, lifetime time.Duration) (fresh []Recorded, expired []string) {
	for k, v := range annotations {
		if !strings.HasPrefix(k, v1alpha1.IntentAnnotationPrefix) {
			continue
		}
		var in v1alpha1.Intent
		if err := json.Unmarshal([]byte(v), &in); err != nil || in.At.IsZero() || !Addressable(in) ||
			now.Sub(in.At.Time) > lifetime || in.At.Sub(now) > lifetime {
			expired = append(expired, k)
			continue
		}
		fresh = append(fresh, Recorded{Key: k, Intent: in})
	}
	sort.Slice(fresh, func(i, j int) bool { return fresh[i].Key < fresh[j].Key })
	sort.Strings(expired)
	return fresh, expired
}

// Addressable reports whether the intent names a dependent the webhook can have
// recorded it for: a name, or a prefix to generate one from, and a
// namespace that could be an object's (admission.Segment). Anyone who may
// annotate the object can write an intent; one naming something else (a
// path, say) is not the webhook's and names nothing to read.
func Addressable(in v1alpha1.Intent) bool {
	if in.Namespace != "" && admission.Namespace(in.Namespace) != nil {
		return false
	}
	if in.Name != "" {
		return admission.Name(in.Name) == nil
	}
	return in.GenerateName != "" && admission.Name(in.GenerateName+"x") == nil
}

// Names reports whether the intent is about the object called name in
// namespace of resource (its generated name, for a create that let the
// server choose it).
func (in Recorded) Names(resource, namespace, name string) bool {
	if in.Resource != resource || in.Namespace != namespace {
		return false
	}
	if in.Name == "" {
		return strings.HasPrefix(name, in.GenerateName)
	}
	return in.Name == name
}

// Clock tells until when the intents on an object stand for writes
// that may still be stored (settle.Intents).
type Clock struct{ Lifetime time.Duration }

// FreshUntil is when the newest fresh intent in annotations expires, the
// zero time when there is none.
func (c Clock) FreshUntil(annotations map[string]string, now time.Time) time.Time {
	fresh, _ := On(annotations, now, c.Lifetime)
	var until time.Time
	for _, in := range fresh {
		if t := in.At.Add(c.Lifetime); t.After(until) {
			until = t
		}
	}
	return until
}

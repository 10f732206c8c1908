package webhook

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/readiness"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
	"github.com/depctrl/terraform-provider-depctrl/runtime/scope"
	"github.com/depctrl/terraform-provider-depctrl/runtime/virtualworkspace"
)

// The registry is current for a request when a read of the rules'
// metadata straight from the server, begun no longer than MaxAge before the
// request is decided, found every rule of the shards the request depends on
// at the version the registry holds (or a later one); for a deletion, a read
// begun after it arrived.
//
// The watches deliver every change of a rule within moments while they
// run, but not to a replica whose process was stopped (a frozen node, a
// SIGSTOP, a paused container): resumed, it decides the requests that reach
// it at once, while the events queued meanwhile are still unread, with the
// rules it held when it stopped. A confirmation older than MaxAge is what a
// resumed process sees first, so it reads the rules again, and waits for its
// registry to catch up with them, before it decides anything.
//
// That bound is a write's (readiness.Recent): one read confirms the
// registry for every write decided in the MaxAge after it began, and a
// write that finds the last one older than half of MaxAge starts the next
// one ahead of need, so that under steady traffic no write waits for one.
// It holds only while the watches that would deliver a change run: once a
// watch of a shard ended (its connection reset, the shard unreachable), or
// was lost and started again, since the last confirmation of the shard
// began, a write too waits for a read begun after it arrived, until one
// begins with the watch live again. A replica whose watch silently stopped
// delivering (no reset) decides writes for up to MaxAge on what it holds;
// a write decided on the rules before a change is found, once stored, by
// the deletion's read of the dependents, and no object is settled under
// the new rules before --settle-after. A deletion (readiness.Now) always
// waits for a read begun after it arrived, shared by every deletion that
// arrived before that read began: a replica cut off
// from a shard just before a rule there changed would otherwise decide it
// on the rules before the change for up to MaxAge.

// DefaultMaxAge is RuleSync.MaxAge's default, the bound the controller's
// Ready counts on (v1alpha1.RuleReadMaxAge).
const DefaultMaxAge = v1alpha1.RuleReadMaxAge

const (
	// confirmTimeout bounds one confirmation: the read of every shard and
	// the wait for the registry to catch up with it.
	confirmTimeout = 10 * time.Second
	// catchUp is how long a confirmation lets the registry catch up with
	// a read it is behind: the watch events of a change on their way
	// explain a difference for that long.
	catchUp = 5 * time.Second
	// catchUpPoll is how often it compares again meanwhile.
	catchUpPoll = 20 * time.Millisecond
)

// ruleVersion is the version of a rule the registry was last given: its
// object's UID and generation. A rule whose new generation was refused
// keeps its previous protections registered, and counts as current at the
// new generation.
type ruleVersion struct {
	uid        string
	generation int64
}

// confirmation is one read of every shard's rules compared with the
// registry.
type confirmation struct {
	started time.Time
	done    chan struct{}
}

// maxAge is MaxAge or its default.
func (s *RuleSync) maxAge() time.Duration {
	if s.MaxAge > 0 {
		return s.MaxAge
	}
	return DefaultMaxAge
}

// current returns nil once a confirmation begun no earlier than MaxAge
// before the call (fresh Recent), or after it (Now), found the registry
// current for every shard sc depends on, and otherwise why not, once the
// confirmation that could tell has ended or ctx has.
func (s *RuleSync) current(ctx context.Context, sc scope.Scope, fresh readiness.Freshness) error {
	if fresh == readiness.Registered {
		return nil
	}
	s.mu.Lock()
	arrived := s.now()
	oldest := arrived.Add(-s.maxAge())
	if fresh == readiness.Now {
		oldest = arrived
	}
	for {
		if len(s.staleLocked(sc, oldest, arrived)) == 0 {
			if s.confirming == nil && len(s.staleLocked(sc, arrived.Add(-s.maxAge()/2), arrived)) > 0 {
				s.startConfirmationLocked()
			}
			s.mu.Unlock()
			return nil
		}
		c := s.confirming
		if c == nil {
			c = s.startConfirmationLocked()
		}
		s.mu.Unlock()
		select {
		case <-c.done:
		case <-ctx.Done():
			s.mu.Lock()
			defer s.mu.Unlock()
			return fmt.Errorf("dependency protection cannot decide this request yet, retry later: %s", s.unconfirmedLocked(s.staleLocked(sc, oldest, arrived), ctx.Err()))
		}
		s.mu.Lock()
		if !c.started.Before(arrived) {
			// Begun after the request arrived: what it found stands.
			defer s.mu.Unlock()
			if stale := s.staleLocked(sc, oldest, arrived); len(stale) > 0 {
				return fmt.Errorf("dependency protection cannot decide this request yet, retry later: %s", s.unconfirmedLocked(stale, nil))
			}
			return nil
		}
	}
}

// staleLocked lists the shards sc depends on whose last confirmation began
// before oldest, or before arrived while a watch of the shard is not live
// or lost its view since that confirmation began, or failed: the shard of
// each cluster sc names whose rules a read found, every shard for one no
// read found, or when sc names none. s.mu must be held.
func (s *RuleSync) staleLocked(sc scope.Scope, oldest, arrived time.Time) []string {
	needed := s.urls
	if sc.Named {
		byShard := map[string]bool{}
		for _, c := range sc.Clusters {
			url, ok := s.clusters[c]
			if !ok {
				byShard = nil
				break
			}
			byShard[url] = true
		}
		if byShard != nil {
			needed = slices.Sorted(maps.Keys(byShard))
		}
	}
	var stale []string
	for _, url := range needed {
		bound := oldest
		if !s.watchedLocked(url) {
			bound = arrived
		}
		if at, ok := s.confirmed[url]; !ok || at.Before(bound) {
			stale = append(stale, url)
		}
	}
	return stale
}

// watchedLocked reports whether every watch of url stayed live, without a
// loss, since the last confirmation of url began; s.mu must be held.
func (s *RuleSync) watchedLocked(url string) bool {
	recorded := s.confirmedLosses[url]
	for i, w := range s.Watches {
		losses, live := w.Health(url)
		if !live || i >= len(recorded) || recorded[i] != losses {
			return false
		}
	}
	return true
}

// healthOf is the losses of each of Watches at url, -1 for one not live:
// a confirmation begun then holds for no later request.
func (s *RuleSync) healthOf(url string) []int {
	losses := make([]int, len(s.Watches))
	for i, w := range s.Watches {
		n, live := w.Health(url)
		if !live {
			n = -1
		}
		losses[i] = n
	}
	return losses
}

// WatchHealth tells whether a watch's view of a shard is live, and how
// many times it was lost (virtualworkspace.Watched).
type WatchHealth interface {
	Health(url string) (losses int, live bool)
}

// unconfirmedLocked says why the rules of the shards at urls are not
// confirmed current; s.mu must be held.
func (s *RuleSync) unconfirmedLocked(urls []string, cause error) string {
	why := make([]string, 0, len(urls))
	for _, url := range urls {
		if err := s.unconfirmed[url]; err != nil {
			why = append(why, err.Error())
		} else if cause != nil {
			why = append(why, fmt.Sprintf("the rules at %s are being read again: %v", url, cause))
		} else {
			why = append(why, fmt.Sprintf("the rules at %s are not confirmed current", url))
		}
	}
	return "this replica could not confirm that it holds the current rules: " + strings.Join(why, "; ")
}

// startConfirmationLocked starts a confirmation of every shard; s.mu must
// be held, and no confirmation be running.
func (s *RuleSync) startConfirmationLocked() *confirmation {
	c := &confirmation{started: s.now(), done: make(chan struct{})}
	s.confirming = c
	go s.confirm(c)
	return c
}

// confirm reads the rules' metadata on every shard and compares them with
// the registry, records the outcome of each shard, and ends c.
func (s *RuleSync) confirm(c *confirmation) {
	ctx := s.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, confirmTimeout)
	defer cancel()
	urls, err := s.VW.URLs(ctx)
	results := map[string]error{}
	health := map[string][]int{}
	if err == nil {
		for _, url := range urls {
			health[url] = s.healthOf(url)
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, url := range urls {
			wg.Go(func() {
				err := s.confirmShard(ctx, url)
				mu.Lock()
				results[url] = err
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	s.mu.Lock()
	if err != nil {
		for _, url := range s.urls {
			results[url] = err
		}
	} else {
		s.urls = urls
	}
	for url, err := range results {
		if err == nil {
			s.confirmed[url] = c.started
			s.confirmedLosses[url] = health[url]
			delete(s.unconfirmed, url)
			confirmations.WithLabelValues("current").Inc()
			continue
		}
		s.unconfirmed[url] = err
		outcome := "unread"
		if errors.Is(err, errBehind) {
			outcome = "behind"
		}
		confirmations.WithLabelValues(outcome).Inc()
		s.Log.Info("the registry is not confirmed current", "shard", url, "reason", err.Error())
	}
	s.confirming = nil
	s.mu.Unlock()
	close(c.done)
}

// errBehind: the registry holds an older version of a rule, or of a
// reference index configuration, than the server.
var errBehind = errors.New("this replica holds an older version than the server of")

// confirmShard reads the rules' metadata on the shard at url and waits, up
// to catchUp, for the registry to hold each at that version or a later one.
func (s *RuleSync) confirmShard(ctx context.Context, url string) error {
	read := s.Versions
	if read == nil {
		read = func(ctx context.Context, url string) ([]virtualworkspace.Meta, error) {
			return s.VW.ListShardMetadata(ctx, url, v1alpha1.GroupVersionResource)
		}
	}
	metas, err := read(ctx, url)
	if err != nil {
		return fmt.Errorf("reading the rules at %s: %w", url, err)
	}
	var configs []virtualworkspace.Meta
	if s.IndexConfigs != nil {
		readConfigs := s.IndexVersions
		if readConfigs == nil {
			readConfigs = func(ctx context.Context, url string) ([]virtualworkspace.Meta, error) {
				return s.VW.ListShardMetadata(ctx, url, virtualworkspace.MutatingWebhookConfigurationsGVR)
			}
		}
		if configs, err = readConfigs(ctx, url); err != nil {
			return fmt.Errorf("reading the reference index configurations at %s: %w", url, err)
		}
	}
	deadline := time.Now().Add(catchUp)
	for {
		behind := s.behind(url, metas, configs)
		if behind == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s at %s", errBehind, behind, url)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s at %s: %w", errBehind, behind, url, ctx.Err())
		case <-time.After(catchUpPoll):
		}
	}
}

// behind names a rule of metas, read from the shard at url, that the
// registry holds at an older version, or not at all, or a reference index
// configuration of configs, read from there too, that it trusts at an
// older version or no longer there; "" when there is none, and then every
// cluster of metas counts as read from url. A rule the registry holds that
// metas lacks, or holds although it is being deleted, only protects more,
// until the watch removes it.
func (s *RuleSync) behind(url string, metas, configs []virtualworkspace.Meta) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.IndexConfigs != nil {
		if cluster := s.IndexConfigs.Behind(configs, func(c string) bool { return s.clusters[c] == url }); cluster != "" {
			return "the reference index configuration in " + cluster
		}
	}
	for _, m := range metas {
		if m.Obj.DeletionTimestamp != nil {
			continue
		}
		key := registry.Key(m.Cluster, m.Obj.Name)
		v, ok := s.versions[key]
		if !ok || v.uid != string(m.Obj.UID) || v.generation < m.Obj.Generation {
			return "rule " + key
		}
	}
	for _, m := range metas {
		s.clusters[m.Cluster] = url
	}
	return ""
}

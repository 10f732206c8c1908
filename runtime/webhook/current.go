package webhook

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
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
// That bound is a write's (admission.Recent): one read confirms the
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
// the new rules before --settle-after. A deletion (admission.Now) always
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

// shardList is the key, among the shards' URLs, of the read of the URLs
// themselves: a request that depends on every shard depends on it too, so
// that a shard the endpoint slice has named since is among them.
const shardList = ""

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
//
// Each shard is confirmed on its own: a shard that answers nothing holds
// up only the requests that depend on it, never one whose rules all live
// on shards that answer.
func (s *RuleSync) current(ctx context.Context, sc admission.Scope, fresh admission.Freshness) error {
	if fresh == admission.Registered {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	arrived := s.now()
	oldest := arrived.Add(-s.maxAge())
	if fresh == admission.Now {
		oldest = arrived
	}
	for {
		stale := s.staleLocked(sc, oldest, arrived)
		if len(stale) == 0 {
			// Ahead of need: the next read of a shard whose last one
			// is older than half of MaxAge.
			for _, url := range s.staleLocked(sc, arrived.Add(-s.maxAge()/2), arrived) {
				if _, under := s.confirming[url]; !under {
					s.startConfirmationLocked(url)
				}
			}
			return nil
		}
		var failed []string
		for _, url := range stale {
			_, under := s.confirming[url]
			switch {
			case under:
			case s.tried[url].Before(arrived):
				s.startConfirmationLocked(url)
			default:
				// Begun after the request arrived, and ended: what it
				// found stands.
				failed = append(failed, url)
			}
		}
		if len(failed) > 0 {
			return fmt.Errorf("dependency protection cannot decide this request yet, retry later: %s", s.unconfirmedLocked(failed, nil))
		}
		ended := s.ended
		s.mu.Unlock()
		select {
		case <-ended:
			s.mu.Lock()
		case <-ctx.Done():
			s.mu.Lock()
			return fmt.Errorf("dependency protection cannot decide this request yet, retry later: %s", s.unconfirmedLocked(s.staleLocked(sc, oldest, arrived), ctx.Err()))
		}
	}
}

// staleLocked lists the shards sc depends on whose last confirmation began
// before oldest, or before arrived while a watch of the shard is not live
// or lost its view since that confirmation began, or failed: the shard of
// each cluster sc names whose rules a read found, and otherwise (a cluster
// no read found, or sc names none) every shard and the read of their URLs
// (shardList). s.mu must be held.
func (s *RuleSync) staleLocked(sc admission.Scope, oldest, arrived time.Time) []string {
	needed := append([]string{shardList}, s.urls...)
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
		if url != shardList && !s.watchedLocked(url) {
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
// many times it was lost (process.Cached).
type WatchHealth interface {
	Health(url string) (losses int, live bool)
}

// unconfirmedLocked says why the rules of the shards at urls are not
// confirmed current; s.mu must be held.
func (s *RuleSync) unconfirmedLocked(urls []string, cause error) string {
	why := make([]string, 0, len(urls))
	for _, url := range urls {
		what := "the rules at " + url
		if url == shardList {
			what = "the list of shards"
		}
		if err := s.unconfirmed[url]; err != nil {
			why = append(why, err.Error())
		} else if cause != nil {
			why = append(why, fmt.Sprintf("%s are being read again: %v", what, cause))
		} else {
			why = append(why, fmt.Sprintf("%s are not confirmed current", what))
		}
	}
	return "this replica could not confirm that it holds the current rules: " + strings.Join(why, "; ")
}

// startConfirmationLocked starts a confirmation of the shard at url, or of
// the list of shards (shardList); s.mu must be held, and no confirmation
// of url be running.
func (s *RuleSync) startConfirmationLocked(url string) {
	started := s.now()
	s.confirming[url] = started
	var health []int
	if url != shardList {
		health = s.healthOf(url)
	}
	go s.confirm(url, started, health)
}

// confirm reads the rules' metadata on the shard at url and compares them
// with the registry, or reads the shards' URLs (shardList), records the
// outcome of the confirmation begun at started, and ends it.
func (s *RuleSync) confirm(url string, started time.Time, health []int) {
	ctx := s.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, confirmTimeout)
	defer cancel()
	var urls []string
	var err error
	if url == shardList {
		urls, err = s.VW.URLs(ctx)
		if err != nil {
			err = fmt.Errorf("reading the list of shards: %w", err)
		}
	} else {
		err = s.confirmShard(ctx, url)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		if url == shardList {
			s.urls = urls
		} else {
			s.confirmedLosses[url] = health
		}
		s.confirmed[url] = started
		delete(s.unconfirmed, url)
		confirmations.WithLabelValues("current").Inc()
	} else {
		s.unconfirmed[url] = err
		outcome := "unread"
		if errors.Is(err, errBehind) {
			outcome = "behind"
		}
		confirmations.WithLabelValues(outcome).Inc()
		s.Log.Info("the registry is not confirmed current", "shard", url, "reason", err.Error())
	}
	s.tried[url] = started
	delete(s.confirming, url)
	close(s.ended)
	s.ended = make(chan struct{})
}

// errBehind: the registry holds an older version of a rule, or of a
// reference index configuration, than the server.
var errBehind = errors.New("this replica holds an older version than the server of")

// confirmShard reads the rules' metadata on the shard at url and waits, up
// to catchUp, for the registry to hold each at that version or a later one.
func (s *RuleSync) confirmShard(ctx context.Context, url string) error {
	read := s.Versions
	if read == nil {
		read = func(ctx context.Context, url string) ([]process.ShardMeta, error) {
			return s.VW.ListShardMetadata(ctx, url, v1alpha1.GroupVersionResource)
		}
	}
	metas, err := read(ctx, url)
	if err != nil {
		return fmt.Errorf("reading the rules at %s: %w", url, err)
	}
	var configs []process.ShardMeta
	if s.IndexConfigs != nil {
		readConfigs := s.IndexVersions
		if readConfigs == nil {
			readConfigs = func(ctx context.Context, url string) ([]process.ShardMeta, error) {
				return s.VW.ListShardMetadata(ctx, url, process.MutatingWebhookConfigurationsGVR)
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
func (s *RuleSync) behind(url string, metas, configs []process.ShardMeta) string {
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

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

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// RuleSync keeps the registry equal to the rules: a read of every shard's
// virtual workspace, then watch events.
//
// The registry is global: a rule lives in the provider workspace that
// exports its dependent type, on any shard, and protects types exported
// anywhere, deleted in consumers on every shard. So it is complete for no
// type until every shard's rules are read. But a logical cluster lives on
// one shard, so once that shard is read every rule in the cluster is
// registered; and the controller names, in each webhook configuration's
// URL, the clusters whose rules the requests it sends depend on (package
// scope). Decidable therefore lets a request through as soon as the shards
// of those clusters are read, while another shard cannot be, and Ready
// reports a pod that read some shards ready after PartialReadyAfter (the
// operating guide's "Blast radius of an outage"). Each shard is read on its
// own: the rules of the shards that answer are registered, and the log of
// every retry names those that did not. Every attempt reads every shard
// again, so that the registry is as fresh at completion as one read of all
// shards would make it.
type RuleSync struct {
	VW       *process.VirtualWorkspaces
	Registry *registry.Registry
	Log      logr.Logger
	// IndexConfigs, when set, is populated with the rules, shard by
	// shard: no index epoch is trusted before its configuration was seen.
	IndexConfigs *index.Configurations
	// Shard reads the rules of one shard's virtual workspace. The webhook
	// reads them from the watches whose events reach Observe, so that a
	// rule deleted before the read is never registered from it; the
	// default lists them.
	Shard func(ctx context.Context, url string) ([]process.ShardObject, error)
	// IndexShard reads the reference index configurations of one shard, as
	// Shard the rules: from the watch whose events reach
	// IndexConfigs.Observe, so that one deleted before the read is never
	// recorded from it (and trusted until its next event); the default
	// lists them.
	IndexShard func(ctx context.Context, url string) ([]process.ShardObject, error)
	// PartialReadyAfter is how long after Start a pod that has read the
	// rules of some shards but not all reports ready; negative: never.
	// Until then a pod whose peers may know every rule leaves the traffic
	// to them (a rollout during a shard's outage keeps the old pods).
	PartialReadyAfter time.Duration

	initialized chan struct{}
	mu          sync.Mutex
	populated   bool
	// watched holds the keys a watch event already decided while the
	// initial read was running; the read must not undo those decisions.
	watched map[string]bool
	// read holds the virtual workspace URLs (one per shard) whose last
	// read succeeded; unread says why each of the others failed.
	read   map[string]bool
	unread map[string]error
	// fromShard holds the keys each shard's last read registered, so that
	// the next read of that shard removes the rules gone meanwhile.
	fromShard map[string]map[string]bool
	// urlsErr is why the shards' URLs could not be read, if they could not.
	urlsErr error
	// clusters holds, for each logical cluster seen in a shard's read, the
	// shard: all of the cluster's rules are registered.
	clusters map[string]string
	// started is when Start began; now is the clock.
	started time.Time
	now     func() time.Time

	// MaxAge is how long before a request is decided the read that
	// confirmed the registry current for it may have begun (current.go);
	// the zero value is DefaultMaxAge.
	MaxAge time.Duration
	// Versions reads the metadata of the rules of one shard from the
	// server; the default lists it through VW.
	Versions func(ctx context.Context, url string) ([]process.ShardMeta, error)
	// IndexVersions reads the metadata of the reference index
	// configurations of one shard from the server, as Versions the rules.
	IndexVersions func(ctx context.Context, url string) ([]process.ShardMeta, error)
	// Watches, when set, are the watches whose events keep the registry
	// current. While one of a shard's is not live, or lost its view since
	// the last confirmation of the shard began, that confirmation holds
	// for no request that arrived after it began (current.go).
	Watches []WatchHealth
	// confirmedLosses holds, by shard, the losses of each of Watches when
	// its last successful confirmation began.
	confirmedLosses map[string][]int
	// ctx is Start's: confirmations outlive the request that starts them.
	ctx context.Context
	// urls are the shards' virtual workspace URLs as last read.
	urls []string
	// versions holds the version of each rule the registry was last
	// given, by key; a rule being deleted has none.
	versions map[string]ruleVersion
	// confirmed holds, by shard (and under shardList for the read of the
	// shards' URLs), when the last confirmation that succeeded began;
	// unconfirmed why the last one did not, and tried when the last one
	// that ended began.
	confirmed   map[string]time.Time
	unconfirmed map[string]error
	tried       map[string]time.Time
	// confirming holds when the confirmation under way of each shard (or
	// of shardList) began; a shard not in it has none under way. Each is
	// one read of a shard's rules compared with the registry, or one read
	// of the shards' URLs.
	confirming map[string]time.Time
	// ended is closed, and replaced, whenever a confirmation ends.
	ended chan struct{}
}

// NewRuleSync returns a RuleSync with an empty registry.
func NewRuleSync(vw *process.VirtualWorkspaces, reg *registry.Registry, log logr.Logger) *RuleSync {
	return &RuleSync{VW: vw, Registry: reg, Log: log, initialized: make(chan struct{}), watched: map[string]bool{},
		read: map[string]bool{}, unread: map[string]error{}, fromShard: map[string]map[string]bool{}, clusters: map[string]string{},
		versions: map[string]ruleVersion{}, confirmed: map[string]time.Time{}, unconfirmed: map[string]error{}, confirmedLosses: map[string][]int{},
		tried: map[string]time.Time{}, confirming: map[string]time.Time{}, ended: make(chan struct{}),
		PartialReadyAfter: DefaultPartialReadyAfter, now: time.Now}
}

// DefaultPartialReadyAfter is RuleSync.PartialReadyAfter's default.
const DefaultPartialReadyAfter = 30 * time.Second

// Initialized is closed once every existing rule is registered.
func (s *RuleSync) Initialized() <-chan struct{} { return s.initialized }

// Ready is a readiness check: ready once every shard's rules are read, or
// once some are and PartialReadyAfter has passed since Start. The error
// names the shards whose rules could not be read yet, and why.
func (s *RuleSync) Ready() error {
	return s.untilInitialized(s.readyLocked)
}

// untilInitialized answers nil once every shard's rules are read, without
// taking s.mu: then every request is decidable and the pod ready. Before
// that it asks check, with s.mu held.
func (s *RuleSync) untilInitialized(check func() error) error {
	select {
	case <-s.initialized:
		return nil
	default:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return check()
}

// readyLocked is Ready before every shard is read; s.mu must be held.
func (s *RuleSync) readyLocked() error {
	if s.urlsErr != nil {
		return fmt.Errorf("rule registry not yet populated: %w", s.urlsErr)
	}
	if len(s.unread) == 0 {
		return fmt.Errorf("rule registry not yet populated")
	}
	if len(s.read) > 0 && s.PartialReadyAfter >= 0 && !s.started.IsZero() && s.now().Sub(s.started) >= s.PartialReadyAfter {
		return nil
	}
	return fmt.Errorf("rule registry not yet populated: %s", s.unreadLocked())
}

// unreadLocked says which shards' rules are not read, and why; s.mu must
// be held.
func (s *RuleSync) unreadLocked() string {
	urls := slices.Sorted(maps.Keys(s.unread))
	if len(urls) == 0 {
		return "the shards' rules are still being read"
	}
	why := make([]string, 0, len(urls))
	for _, u := range urls {
		why = append(why, s.unread[u].Error())
	}
	return fmt.Sprintf("the rules of %d of %d shards are not read: %s", len(urls), len(urls)+len(s.read), strings.Join(why, "; "))
}

// Decidable reports whether every rule of the clusters sc names is
// registered, and current: registered always once every shard was read;
// before that, when each of them was seen in the read of its shard (a
// scope that names no clusters needs every shard). Current once a read of
// the rules begun no longer ago than fresh allows confirmed it (current.go);
// it waits, up to ctx's end, for one that can.
func (s *RuleSync) Decidable(ctx context.Context, sc admission.Scope, fresh admission.Freshness) error {
	if err := s.untilInitialized(func() error { return s.decidableLocked(sc) }); err != nil {
		return err
	}
	return s.current(ctx, sc, fresh)
}

// decidableLocked is Decidable before every shard is read; s.mu must be
// held.
func (s *RuleSync) decidableLocked(sc admission.Scope) error {
	if len(s.read) == 0 && len(s.clusters) == 0 {
		return admission.ErrNotInitialized
	}
	if !sc.Named {
		return fmt.Errorf("dependency protection cannot decide this request yet, retry later: it may depend on the rules of any workspace, and %s", s.unreadLocked())
	}
	var missing []string
	for _, c := range sc.Clusters {
		if _, ok := s.clusters[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("dependency protection cannot decide this request yet, retry later: it depends on the rules in logical cluster(s) %s, which no shard read so far holds; %s",
		strings.Join(missing, ", "), s.unreadLocked())
}

// Start reads every rule from every shard's virtual workspace, retrying
// until it succeeds, then marks the registry complete. It runs on every
// replica.
func (s *RuleSync) Start(ctx context.Context) error {
	s.mu.Lock()
	s.started = s.now()
	s.ctx = ctx
	s.mu.Unlock()
	backoff := 500 * time.Millisecond
	for {
		n, err := s.populate(ctx)
		if err == nil {
			s.Log.Info("rule registry populated", "rules", s.Registry.Len(), "read in the last attempt", n, "shards", len(s.read))
			close(s.initialized)
			<-ctx.Done()
			return nil
		}
		s.Log.Error(err, "populating the rule registry; retrying", "after", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

// NeedLeaderElection: every replica needs its own registry.
func (s *RuleSync) NeedLeaderElection() bool { return false }

// populate reads the rules of every shard and registers those of each shard
// that answers. It returns how many rules it read and, when a shard did not
// answer, an error naming the shards; the registry is complete (populated)
// only once every shard answered in one attempt.
func (s *RuleSync) populate(ctx context.Context) (int, error) {
	urls, err := s.VW.URLs(ctx)
	s.mu.Lock()
	s.urlsErr = err
	if err == nil {
		s.urls = urls
	}
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, url := range urls {
		objs, err := s.readShard(ctx, url)
		var configs []process.ShardObject
		if err == nil && s.IndexConfigs != nil {
			configs, err = s.readIndexShard(ctx, url)
		}
		if err != nil {
			s.mu.Lock()
			s.unread[url] = err
			delete(s.read, url)
			s.mu.Unlock()
			errs = append(errs, err)
			continue
		}
		if s.IndexConfigs != nil {
			s.IndexConfigs.Apply(configs)
		}
		s.register(url, objs)
		n += len(objs)
	}
	if len(errs) > 0 {
		return n, fmt.Errorf("the rules of %d of %d shards are not read: %w", len(errs), len(urls), errors.Join(errs...))
	}
	if s.IndexConfigs != nil {
		s.IndexConfigs.Complete()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.populated = true
	s.watched = nil
	// A shard that left the endpoint slice meanwhile no longer counts.
	clear(s.unread)
	rulesRegistered.Set(float64(s.Registry.Len()))
	return n, nil
}

// readShard reads the rules of the shard at url.
func (s *RuleSync) readShard(ctx context.Context, url string) ([]process.ShardObject, error) {
	if s.Shard != nil {
		return s.Shard(ctx, url)
	}
	return s.VW.ListShard(ctx, url, v1alpha1.GroupVersionResource)
}

// readIndexShard reads the reference index configurations of the shard at
// url.
func (s *RuleSync) readIndexShard(ctx context.Context, url string) ([]process.ShardObject, error) {
	read := s.IndexShard
	if read == nil {
		read = func(ctx context.Context, url string) ([]process.ShardObject, error) {
			return s.VW.ListShard(ctx, url, process.MutatingWebhookConfigurationsGVR)
		}
	}
	objs, err := read(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("reading the reference index configurations: %w", err)
	}
	return objs, nil
}

// register records the rules read from the shard at url and removes those
// its previous read registered that are gone, except where a watch event
// decided meanwhile.
func (s *RuleSync) register(url string, objs []process.ShardObject) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make(map[string]bool, len(objs))
	for _, o := range objs {
		key := registry.Key(o.Cluster, o.Obj.GetName())
		seen[key] = true
		s.clusters[o.Cluster] = url
		if s.watched[key] {
			continue
		}
		s.versions[key] = ruleVersion{uid: string(o.Obj.GetUID()), generation: o.Obj.GetGeneration()}
		rule := &v1alpha1.DependencyRule{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Obj.Object, rule); err != nil {
			s.Log.Error(err, "decoding rule", "rule", key)
			continue
		}
		if _, err := s.Registry.Register(key, rule); err != nil {
			s.Log.Error(err, "rule not registered", "rule", key)
		}
	}
	for key := range s.fromShard[url] {
		if !seen[key] && !s.watched[key] {
			s.Registry.Unregister(key)
			delete(s.versions, key)
		}
	}
	s.fromShard[url] = seen
	s.read[url] = true
	delete(s.unread, url)
	rulesRegistered.Set(float64(s.Registry.Len()))
}

// Observe records the current state of one rule, read through c, in the
// registry, and reports the outcome in the rule's Enforced condition.
func (s *RuleSync) Observe(ctx context.Context, c client.Client, cluster, name string) error {
	key := registry.Key(cluster, name)
	rule := &v1alpha1.DependencyRule{}
	err := c.Get(ctx, client.ObjectKey{Name: name}, rule)
	s.mu.Lock()
	if !s.populated {
		s.watched[key] = true
	}
	if apierrors.IsNotFound(err) {
		delete(s.versions, key)
		if s.Registry.Unregister(key) != nil {
			s.Log.Info("rule removed", "rule", key)
		}
		rulesRegistered.Set(float64(s.Registry.Len()))
		s.mu.Unlock()
		return nil
	}
	if err != nil {
		s.mu.Unlock()
		return fmt.Errorf("reading rule %s: %w", key, err)
	}
	enforced := metav1.Condition{Type: v1alpha1.ConditionEnforced, ObservedGeneration: rule.Generation}
	if !rule.DeletionTimestamp.IsZero() {
		delete(s.versions, key)
		s.Registry.Unregister(key)
		s.mu.Unlock()
		return nil
	}
	s.versions[key] = ruleVersion{uid: string(rule.UID), generation: rule.Generation}
	if _, regErr := s.Registry.Register(key, rule); regErr != nil {
		// Keep enforcing the previous generation, if any: a bad edit must
		// not open a gap in protection.
		enforced.Status, enforced.Reason, enforced.Message = metav1.ConditionFalse, "InvalidRule", regErr.Error()
		s.Log.Error(regErr, "rule not registered", "rule", key)
	} else {
		enforced.Status, enforced.Reason = metav1.ConditionTrue, "Registered"
		enforced.Message = fmt.Sprintf("the webhook checks deletions against generation %d of this rule", rule.Generation)
		s.Log.V(1).Info("rule registered", "rule", key, "generation", rule.Generation)
	}
	rulesRegistered.Set(float64(s.Registry.Len()))
	s.mu.Unlock()

	if c := meta.FindStatusCondition(rule.Status.Conditions, enforced.Type); c != nil &&
		c.Status == enforced.Status && c.Reason == enforced.Reason && c.ObservedGeneration == enforced.ObservedGeneration {
		return nil
	}
	meta.SetStatusCondition(&rule.Status.Conditions, enforced)
	if err := c.Status().Update(ctx, rule); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("writing Enforced condition of rule %s: %w", key, err)
	}
	return nil
}

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

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
	"github.com/depctrl/terraform-provider-depctrl/runtime/virtualworkspace"
)

// RuleSync keeps the registry equal to the rules: a full read of every
// virtual workspace before the webhook reports ready, then watch events.
//
// The registry is global: a rule lives in the provider workspace that
// exports its dependent type, on any shard, and protects types exported
// anywhere, deleted in consumers on every shard. So the registry is
// complete for no type until every shard's rules are read, and one
// unreadable shard keeps a starting webhook unready (the operating guide's
// "Blast radius of an outage" says what that refuses and for how long).
// Each shard is read on its own: the rules of the shards that answer are
// registered, and the log of every retry names those that did not (so does
// the readiness check's error, which the probe endpoint withholds and logs
// at debug level). Every attempt reads every shard again, so that the
// registry is as fresh at completion as one read of all shards would make
// it.
type RuleSync struct {
	VW       *virtualworkspace.VirtualWorkspaces
	Registry *registry.Registry
	Log      logr.Logger
	// IndexConfigs, when set, is populated with the rules: no index epoch
	// is trusted before its configuration was seen.
	IndexConfigs *IndexConfigurations

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
}

// NewRuleSync returns a RuleSync with an empty registry.
func NewRuleSync(vw *virtualworkspace.VirtualWorkspaces, reg *registry.Registry, log logr.Logger) *RuleSync {
	return &RuleSync{VW: vw, Registry: reg, Log: log, initialized: make(chan struct{}), watched: map[string]bool{},
		read: map[string]bool{}, unread: map[string]error{}, fromShard: map[string]map[string]bool{}}
}

// Initialized is closed once every existing rule is registered.
func (s *RuleSync) Initialized() <-chan struct{} { return s.initialized }

// Ready is a readiness check: not ready until the registry is complete. The
// error names the shards whose rules could not be read yet, and why.
func (s *RuleSync) Ready() error {
	select {
	case <-s.initialized:
		return nil
	default:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.urlsErr != nil {
		return fmt.Errorf("rule registry not yet populated: %w", s.urlsErr)
	}
	if len(s.unread) == 0 {
		return fmt.Errorf("rule registry not yet populated")
	}
	urls := slices.Sorted(maps.Keys(s.unread))
	why := make([]string, 0, len(urls))
	for _, u := range urls {
		why = append(why, s.unread[u].Error())
	}
	return fmt.Errorf("rule registry not yet populated: the rules of %d of %d shards are not read: %s",
		len(urls), len(urls)+len(s.read), strings.Join(why, "; "))
}

// Start reads every rule from every shard's virtual workspace, retrying
// until it succeeds, then marks the registry complete. It runs on every
// replica.
func (s *RuleSync) Start(ctx context.Context) error {
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
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, url := range urls {
		objs, err := s.VW.ListShard(ctx, url, v1alpha1.GroupVersionResource)
		if err != nil {
			s.mu.Lock()
			s.unread[url] = err
			delete(s.read, url)
			s.mu.Unlock()
			errs = append(errs, err)
			continue
		}
		s.register(url, objs)
		n += len(objs)
	}
	if len(errs) > 0 {
		return n, fmt.Errorf("the rules of %d of %d shards are not read: %w", len(errs), len(urls), errors.Join(errs...))
	}
	if s.IndexConfigs != nil {
		if err := s.IndexConfigs.Populate(ctx, s.VW, urls); err != nil {
			return n, err
		}
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

// register records the rules read from the shard at url and removes those
// its previous read registered that are gone, except where a watch event
// decided meanwhile.
func (s *RuleSync) register(url string, objs []virtualworkspace.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make(map[string]bool, len(objs))
	for _, o := range objs {
		key := registry.Key(o.Cluster, o.Obj.GetName())
		seen[key] = true
		if s.watched[key] {
			continue
		}
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
		s.Registry.Unregister(key)
		s.mu.Unlock()
		return nil
	}
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

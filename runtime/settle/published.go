package settle

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// PublishedStamps tells which stamps the controller has published for each
// protected resource: those whose settled objects the deletion webhooks
// leave out, read from the protection configurations through the dep-ctrl
// virtual workspaces. The webhook settles objects only under a published
// stamp. The controller writes one only after the webhook's rollout has
// finished (depctrl_runtime applies it last), so no older webhook that
// would not unsettle a newly referenced object is serving by then.
type PublishedStamps struct {
	mu sync.Mutex
	// byCluster maps each protected workspace to what its configuration
	// publishes for each resource it covers: no stamp when its entries
	// do not agree.
	byCluster map[string]map[schema.GroupResource]Publication
	// clients reach each protected workspace through the virtual
	// workspace, to withdraw a stamp.
	clients map[string]client.Client
}

// Accepts reports whether every configuration that covers gr, and at least
// one does, leaves out objects settled under stamp.
func (p *PublishedStamps) Accepts(gr schema.GroupResource, stamp string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	pub, ok := agreed(maps.Values(p.byCluster), gr)
	return ok && pub.Accepts(stamp)
}

// agreed is what every one of configs (each mapping the resources it
// covers to what it publishes, as PublishedIn does) that covers gr
// publishes, and whether they agree on a stamp: false when none covers gr,
// one covers it without a stamp, or two call different stamps current.
// Configurations that call the same stamp current agree on the stamps they
// all accept: so while the webhook ends a bridge in one configuration after
// another, the current stamp stays agreed on.
func agreed(configs iter.Seq[map[schema.GroupResource]Publication], gr schema.GroupResource) (Publication, bool) {
	var first Publication
	found := false
	for pubs := range configs {
		pub, ok := pubs[gr]
		switch {
		case !ok:
		case len(pub.Rules) == 0:
			return Publication{}, false
		case !found:
			first, found = pub, true
		case pub.sameAs(first):
		case pub.Current == "" || pub.Current != first.Current:
			return Publication{}, false
		default:
			first = first.within(pub)
		}
	}
	return first, found
}

// PublishedBy maps each resource configs publish a stamp for to what they
// publish, as Accepts reads it: one they cover without agreeing on it has
// none. It is how the controller reads the stamps it published, so that it
// and the webhook never disagree on one.
func PublishedBy(configs []*admissionregistrationv1.ValidatingWebhookConfiguration) map[schema.GroupResource]Publication {
	in := make([]map[schema.GroupResource]Publication, 0, len(configs))
	covered := map[schema.GroupResource]bool{}
	for _, cfg := range configs {
		pubs := PublishedIn(cfg)
		in = append(in, pubs)
		for gr := range pubs {
			covered[gr] = true
		}
	}
	out := make(map[schema.GroupResource]Publication, len(covered))
	for gr := range covered {
		if pub, ok := agreed(slices.Values(in), gr); ok {
			out[gr] = pub
		}
	}
	return out
}

// Unjustified reports whether some configuration accepts, for gr, a stamp
// that is neither stamp, the stamp of the current rules ps, nor one kept
// from rules that keep them or bridge to them (Publication.Justified).
func (p *PublishedStamps) Unjustified(gr schema.GroupResource, stamp string, ps []Protecting) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pubs := range p.byCluster {
		if pub, ok := pubs[gr]; ok && !pub.Justified(stamp, ps) {
			return true
		}
	}
	return false
}

// Current is the stamp every configuration that covers gr calls current,
// "" when they do not agree on one.
func (p *PublishedStamps) Current(gr schema.GroupResource) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	pub, _ := agreed(maps.Values(p.byCluster), gr)
	return pub.Current
}

// Accepted lists the stamps some configuration accepts for gr, sorted.
func (p *PublishedStamps) Accepted(gr schema.GroupResource) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, pubs := range p.byCluster {
		out = append(out, pubs[gr].Stamps()...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Bridged lists the stamps some configuration accepts for gr as bridges to
// the current rules ps (Publication.Bridged), sorted.
func (p *PublishedStamps) Bridged(gr schema.GroupResource, ps []Protecting) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, pubs := range p.byCluster {
		out = append(out, pubs[gr].Bridged(ps)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// OnlyBridges reports whether every stamp the configurations accept for gr
// is a bridge to the current rules ps.
func (p *PublishedStamps) OnlyBridges(gr schema.GroupResource, ps []Protecting) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pubs := range p.byCluster {
		pub := pubs[gr]
		if len(pub.Bridged(ps)) != len(pub.Rules) {
			return false
		}
	}
	return true
}

// Stamped lists the resources some configuration accepts a stamp for.
func (p *PublishedStamps) Stamped() []schema.GroupResource {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[schema.GroupResource]bool{}
	var out []schema.GroupResource
	for _, pubs := range p.byCluster {
		for gr, pub := range pubs {
			if len(pub.Rules) > 0 && !seen[gr] {
				seen[gr] = true
				out = append(out, gr)
			}
		}
	}
	return out
}

// Observe records the configuration called name in cluster, read through cl.
func (p *PublishedStamps) Observe(ctx context.Context, cl client.Client, cluster, name string) error {
	if name != v1alpha1.WebhookConfigurationName {
		return nil
	}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	err := cl.Get(ctx, client.ObjectKey{Name: name}, cfg)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading the protection configuration in %s: %w", cluster, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byCluster == nil {
		p.byCluster = map[string]map[schema.GroupResource]Publication{}
		p.clients = map[string]client.Client{}
	}
	p.clients[cluster] = cl
	if err != nil || cfg.DeletionTimestamp != nil {
		delete(p.byCluster, cluster)
		return nil
	}
	p.byCluster[cluster] = PublishedIn(cfg)
	return nil
}

// PublishedIn maps each resource whose deletions cfg sends to the webhook to
// what its entry publishes: the stamps its selector leaves out, with the
// rules and the current one cfg's StampsAnnotation records. A resource in
// two entries that disagree publishes none.
func PublishedIn(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) map[schema.GroupResource]Publication {
	rec := readStampsRecord(cfg.Annotations[StampsAnnotation])
	out := map[schema.GroupResource]Publication{}
	disagree := map[schema.GroupResource]bool{}
	for _, w := range cfg.Webhooks {
		stamps := StampsOf(w.ObjectSelector)
		for _, r := range w.Rules {
			if !slices.Contains(r.Operations, admissionregistrationv1.Delete) && !slices.Contains(r.Operations, admissionregistrationv1.OperationAll) {
				continue
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					gr := schema.GroupResource{Group: g, Resource: res}
					pub := publication(stamps, rec, gr)
					if seen, ok := out[gr]; ok && !seen.sameAs(pub) {
						disagree[gr] = true
					}
					out[gr] = pub
				}
			}
		}
	}
	for gr := range disagree {
		out[gr] = Publication{}
	}
	return out
}

// publication is what an entry leaving out stamps publishes for gr, by the
// record rec. Without a record, a single stamp is the current one (as
// controllers wrote it before there were records), and its rules are not
// known.
func publication(stamps []string, rec stampsRecord, gr schema.GroupResource) Publication {
	pub := Publication{Rules: make(map[string][]RuleRef, len(stamps))}
	for _, s := range stamps {
		pub.Rules[s] = rec.Rules[s]
	}
	switch current := rec.Current[gr.String()]; {
	case pub.Accepts(current):
		pub.Current = current
	case len(stamps) == 1 && rec.Current == nil && rec.Rules == nil:
		pub.Current = stamps[0]
	}
	return pub
}

// Withdraw makes every configuration that publishes a stamp for gr send all
// of gr's deletions to the webhook again, as the controller does when a
// reference index that the stamp relies on is gone or the rules change. The webhook does it
// itself so that this holds while the controller is down: writes that skip
// the index record no intent, and a settled object they reference must not
// be deleted without a decision.
func (p *PublishedStamps) Withdraw(ctx context.Context, gr schema.GroupResource) error {
	return p.WithdrawOnly(ctx, gr, nil)
}

// WithdrawOnly makes every configuration that publishes a stamp for gr stop
// accepting those of stamps, or every one when stamps is nil: gr's objects
// settled under them go to the webhook again, those under the others do
// not.
func (p *PublishedStamps) WithdrawOnly(ctx context.Context, gr schema.GroupResource, stamps []string) error {
	p.mu.Lock()
	var clusters []string
	for cluster, pubs := range p.byCluster {
		if len(pubs[gr].Rules) > 0 {
			clusters = append(clusters, cluster)
		}
	}
	clients := make([]client.Client, len(clusters))
	for i, c := range clusters {
		clients[i] = p.clients[c]
	}
	p.mu.Unlock()
	var errs []error
	for i, cl := range clients {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := cl.Get(ctx, client.ObjectKey{Name: v1alpha1.WebhookConfigurationName}, cfg); err != nil {
				return client.IgnoreNotFound(err)
			}
			if !withdrawStamps(cfg, gr, stamps) {
				return nil
			}
			return cl.Update(ctx, cfg)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("withdrawing the stamp of %s in %s: %w", gr, clusters[i], err))
		}
	}
	return errors.Join(errs...)
}

// withdrawStamps makes the entries of cfg that leave out gr's settled
// objects stop leaving out those settled under stamps (under any, for nil),
// and reports whether it changed any.
func withdrawStamps(cfg *admissionregistrationv1.ValidatingWebhookConfiguration, gr schema.GroupResource, stamps []string) bool {
	changed := false
	for i := range cfg.Webhooks {
		w := &cfg.Webhooks[i]
		accepted := StampsOf(w.ObjectSelector)
		if len(accepted) == 0 {
			continue
		}
		for _, r := range w.Rules {
			if slices.Contains(r.APIGroups, gr.Group) && slices.Contains(r.Resources, gr.Resource) {
				left := []string{}
				if stamps != nil {
					left = slices.DeleteFunc(accepted, func(s string) bool { return slices.Contains(stamps, s) })
				}
				if len(left) != len(accepted) {
					w.ObjectSelector = Selector(left...)
					changed = true
				}
				break
			}
		}
	}
	return changed
}

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

// PublishedStamps tells which stamp the controller has published for each
// protected resource: the one whose settled objects the deletion webhooks
// leave out, read from the protection configurations through the dep-ctrl
// virtual workspaces. The webhook settles objects only under a published
// stamp. The controller writes one only after the webhook's rollout has
// finished (depctrl_runtime applies it last), so no older webhook that
// would not unsettle a newly referenced object is serving by then.
type PublishedStamps struct {
	mu sync.Mutex
	// byCluster maps each protected workspace to the stamp of each
	// resource its configuration covers, "" for none.
	byCluster map[string]map[schema.GroupResource]string
	// clients reach each protected workspace through the virtual
	// workspace, to withdraw a stamp.
	clients map[string]client.Client
}

// Published is the stamp every configuration that covers gr publishes, ""
// when none does or they disagree.
func (p *PublishedStamps) Published(gr schema.GroupResource) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return agreed(maps.Values(p.byCluster), gr)
}

// agreed is the stamp every one of configs (each mapping the resources it
// covers to the stamp it publishes, as PublishedIn does) that covers gr
// publishes, "" when none does, one covers it without a stamp, or they
// disagree.
func agreed(configs iter.Seq[map[schema.GroupResource]string], gr schema.GroupResource) string {
	stamp := ""
	for stamps := range configs {
		s, ok := stamps[gr]
		switch {
		case !ok:
		case s == "" || (stamp != "" && s != stamp):
			return ""
		default:
			stamp = s
		}
	}
	return stamp
}

// PublishedBy maps each resource configs publish a stamp for to that
// stamp, as Published reads it: one they cover without agreeing on a stamp
// has none. It is how the controller reads the stamps it published, so
// that it and the webhook never disagree on one.
func PublishedBy(configs []*admissionregistrationv1.ValidatingWebhookConfiguration) map[schema.GroupResource]string {
	in := make([]map[schema.GroupResource]string, 0, len(configs))
	covered := map[schema.GroupResource]bool{}
	for _, cfg := range configs {
		stamps := PublishedIn(cfg)
		in = append(in, stamps)
		for gr := range stamps {
			covered[gr] = true
		}
	}
	out := make(map[schema.GroupResource]string, len(covered))
	for gr := range covered {
		if stamp := agreed(slices.Values(in), gr); stamp != "" {
			out[gr] = stamp
		}
	}
	return out
}

// Other reports whether some configuration publishes a stamp for gr other
// than stamp.
func (p *PublishedStamps) Other(gr schema.GroupResource, stamp string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, stamps := range p.byCluster {
		if s := stamps[gr]; s != "" && s != stamp {
			return true
		}
	}
	return false
}

// Stamped lists the resources some configuration publishes a stamp for.
func (p *PublishedStamps) Stamped() []schema.GroupResource {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[schema.GroupResource]bool{}
	var out []schema.GroupResource
	for _, stamps := range p.byCluster {
		for gr, s := range stamps {
			if s != "" && !seen[gr] {
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
		p.byCluster = map[string]map[schema.GroupResource]string{}
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
// the stamp its entry leaves out; a resource in two entries that disagree
// publishes none.
func PublishedIn(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) map[schema.GroupResource]string {
	out := map[schema.GroupResource]string{}
	for _, w := range cfg.Webhooks {
		stamp := StampOf(w.ObjectSelector)
		for _, r := range w.Rules {
			if !slices.Contains(r.Operations, admissionregistrationv1.Delete) && !slices.Contains(r.Operations, admissionregistrationv1.OperationAll) {
				continue
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					gr := schema.GroupResource{Group: g, Resource: res}
					if s, seen := out[gr]; seen && s != stamp {
						out[gr] = ""
						continue
					}
					out[gr] = stamp
				}
			}
		}
	}
	return out
}

// Withdraw makes every configuration that publishes a stamp for gr send all
// of gr's deletions to the webhook again, as the controller does when a
// reference index that the stamp relies on is gone or the rules change. The webhook does it
// itself so that this holds while the controller is down: writes that skip
// the index record no intent, and a settled object they reference must not
// be deleted without a decision.
func (p *PublishedStamps) Withdraw(ctx context.Context, gr schema.GroupResource) error {
	p.mu.Lock()
	var clusters []string
	for cluster, stamps := range p.byCluster {
		if stamps[gr] != "" {
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
			if !withdrawStamp(cfg, gr) {
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

// withdrawStamp makes the entries of cfg that leave out gr's settled objects
// select every object, and reports whether it changed any.
func withdrawStamp(cfg *admissionregistrationv1.ValidatingWebhookConfiguration, gr schema.GroupResource) bool {
	changed := false
	for i := range cfg.Webhooks {
		w := &cfg.Webhooks[i]
		if StampOf(w.ObjectSelector) == "" {
			continue
		}
		for _, r := range w.Rules {
			if slices.Contains(r.APIGroups, gr.Group) && slices.Contains(r.Resources, gr.Resource) {
				w.ObjectSelector = Selector("")
				changed = true
				break
			}
		}
	}
	return changed
}

package webhook

import (
	"context"
	"fmt"
	"slices"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
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
}

// Published is the stamp every configuration that covers gr publishes, ""
// when none does or they disagree.
func (p *PublishedStamps) Published(gr schema.GroupResource) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	stamp := ""
	for _, stamps := range p.byCluster {
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
	}
	if err != nil || cfg.DeletionTimestamp != nil {
		delete(p.byCluster, cluster)
		return nil
	}
	p.byCluster[cluster] = publishedIn(cfg)
	return nil
}

// publishedIn maps each resource whose deletions cfg sends to the webhook to
// the stamp its entry leaves out; a resource in two entries that disagree
// publishes none.
func publishedIn(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) map[schema.GroupResource]string {
	out := map[schema.GroupResource]string{}
	for _, w := range cfg.Webhooks {
		stamp := settle.StampOf(w.ObjectSelector)
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

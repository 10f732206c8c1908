package webhook

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/virtualworkspace"
)

// IndexConfigurations tells the registry which reference index
// configurations are in place as the controller wrote them, read through
// the dep-ctrl virtual workspaces like the rules. A rule's indexEpoch is
// trusted only while the configuration it names is (registry
// SetIndexConfiguration): the controller may be down when someone deletes
// or edits one.
type IndexConfigurations struct {
	Registry interface {
		SetIndexConfiguration(cluster, uid string)
	}
	Log logr.Logger

	mu        sync.Mutex
	populated bool
	// watched holds the clusters a watch event already decided while
	// Populate was reading; its older read must not undo those.
	watched map[string]bool
}

// ListShard reads the reference index configurations of one shard, for
// Apply.
func (c *IndexConfigurations) ListShard(ctx context.Context, vw *virtualworkspace.VirtualWorkspaces, url string) ([]virtualworkspace.Object, error) {
	objs, err := vw.ListShard(ctx, url, virtualworkspace.MutatingWebhookConfigurationsGVR)
	if err != nil {
		return nil, fmt.Errorf("reading the reference index configurations: %w", err)
	}
	return objs, nil
}

// Apply records the configurations one shard's read returned, except those
// a watch event decided meanwhile: until a shard is read, no epoch of a
// rule there is trusted.
func (c *IndexConfigurations) Apply(objs []virtualworkspace.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range objs {
		if o.Obj.GetName() != v1alpha1.WebhookConfigurationName || c.watched[o.Cluster] {
			continue
		}
		cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Obj.Object, cfg); err != nil {
			c.Log.Error(err, "decoding a reference index configuration", "cluster", o.Cluster)
			continue
		}
		c.Registry.SetIndexConfiguration(o.Cluster, intactIndexEpoch(cfg))
	}
}

// Complete marks every shard read: from now on only watch events change
// what is recorded.
func (c *IndexConfigurations) Complete() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.populated, c.watched = true, nil
}

// Observe records the current state of the configuration called name in
// cluster, read through cl.
func (c *IndexConfigurations) Observe(ctx context.Context, cl client.Client, cluster, name string) error {
	if name != v1alpha1.WebhookConfigurationName {
		return nil
	}
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	err := cl.Get(ctx, client.ObjectKey{Name: name}, cfg)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.populated {
		if c.watched == nil {
			c.watched = map[string]bool{}
		}
		c.watched[cluster] = true
	}
	switch {
	case apierrors.IsNotFound(err):
		c.Registry.SetIndexConfiguration(cluster, "")
		return nil
	case err != nil:
		return fmt.Errorf("reading the reference index configuration in %s: %w", cluster, err)
	}
	epoch := intactIndexEpoch(cfg)
	if epoch == "" {
		c.Log.Info("reference index configuration changed by someone other than the controller: its rules' labels are not trusted until it is rewritten", "cluster", cluster)
	}
	c.Registry.SetIndexConfiguration(cluster, epoch)
	return nil
}

// intactIndexEpoch is the UID of cfg when it is the controller's reference
// index configuration as the controller last wrote it, else "". Every write
// of a dependent must still reach the index: its webhook, failing closed,
// selecting every object and namespace, with no match conditions. Only the
// controller's own webhooks may be in it (the other one withdraws intents).
func intactIndexEpoch(cfg *admissionregistrationv1.MutatingWebhookConfiguration) string {
	if cfg.DeletionTimestamp != nil ||
		cfg.Labels[v1alpha1.ManagedByLabel] != v1alpha1.WebhookConfigurationManager ||
		cfg.Annotations[v1alpha1.WrittenGenerationAnnotation] != strconv.FormatInt(cfg.Generation, 10) {
		return ""
	}
	index := 0
	for _, h := range cfg.Webhooks {
		switch h.Name {
		case v1alpha1.IndexWebhookName:
			index++
			if h.FailurePolicy == nil || *h.FailurePolicy != admissionregistrationv1.Fail ||
				len(h.MatchConditions) > 0 || !selectsAll(h.NamespaceSelector) || !selectsAll(h.ObjectSelector) {
				return ""
			}
		case v1alpha1.IntentWithdrawWebhookName:
		default:
			return ""
		}
	}
	if index != 1 {
		return ""
	}
	return string(cfg.UID)
}

func selectsAll(s *metav1.LabelSelector) bool {
	return s == nil || (len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0)
}

package index

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// Configurations tells the registry which reference index
// configurations are in place as the controller wrote them, read through
// the dep-ctrl virtual workspaces like the rules. A rule's indexEpoch is
// trusted only while the configuration it names is (registry
// SetIndexConfiguration): the controller may be down when someone deletes
// or edits one.
type Configurations struct {
	Registry interface {
		SetIndexConfiguration(cluster, uid string)
	}
	Log logr.Logger

	mu        sync.Mutex
	populated bool
	// watched holds the clusters a watch event already decided while
	// Populate was reading; its older read must not undo those.
	watched map[string]bool
	// trusted holds, for each cluster whose configuration is intact, the
	// resource version it was seen at.
	trusted map[string]string
}

// trust records what the registry was told of the configuration in
// cluster: intact at resourceVersion, or not (epoch ""); c.mu must be held.
func (c *Configurations) trust(cluster, epoch, resourceVersion string) {
	c.Registry.SetIndexConfiguration(cluster, epoch)
	if epoch == "" {
		delete(c.trusted, cluster)
		return
	}
	if c.trusted == nil {
		c.trusted = map[string]string{}
	}
	c.trusted[cluster] = resourceVersion
}

// Behind names a cluster whose configuration the registry trusts at an
// older version than metas, the configurations listed on one shard, or
// trusts although metas lacks it; onShard tells the clusters of that
// shard. "" when there is none. A configuration metas has that the
// registry does not trust only costs full reads, until its event comes.
func (c *Configurations) Behind(metas []process.ShardMeta, onShard func(cluster string) bool) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	listed := map[string]bool{}
	for _, m := range metas {
		if m.Obj.Name != v1alpha1.WebhookConfigurationName {
			continue
		}
		listed[m.Cluster] = true
		if rv, ok := c.trusted[m.Cluster]; ok && (m.Obj.DeletionTimestamp != nil || olderVersion(rv, m.Obj.ResourceVersion)) {
			return m.Cluster
		}
	}
	for cluster := range c.trusted {
		if !listed[cluster] && onShard(cluster) {
			return cluster
		}
	}
	return ""
}

// olderVersion reports whether resource version a is older than b: by
// number within one shard's storage, where both are one; else unless they
// are equal.
func olderVersion(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return a != b
	}
	return x < y
}

// Apply records the configurations one shard's read returned, except those
// a watch event decided meanwhile: until a shard is read, no epoch of a
// rule there is trusted.
func (c *Configurations) Apply(objs []process.ShardObject) {
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
		c.trust(o.Cluster, v1alpha1.IntactIndexEpoch(cfg), cfg.ResourceVersion)
	}
}

// Populated reports whether every shard's configurations have been read.
func (c *Configurations) Populated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.populated
}

// Complete marks every shard read: from now on only watch events change
// what is recorded.
func (c *Configurations) Complete() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.populated, c.watched = true, nil
}

// Observe records the current state of the configuration called name in
// cluster, read through cl.
func (c *Configurations) Observe(ctx context.Context, cl client.Client, cluster, name string) error {
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
		c.trust(cluster, "", "")
		return nil
	case err != nil:
		return fmt.Errorf("reading the reference index configuration in %s: %w", cluster, err)
	}
	epoch := v1alpha1.IntactIndexEpoch(cfg)
	if epoch == "" {
		c.Log.Info("reference index configuration changed by someone other than the controller: its rules' labels are not trusted until it is rewritten", "cluster", cluster)
	}
	c.trust(cluster, epoch, cfg.ResourceVersion)
	return nil
}

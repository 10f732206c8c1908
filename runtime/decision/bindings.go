package decision

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kcp-dev/logicalcluster/v3"
	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	"github.com/kcp-dev/sdk/apis/apis/v1alpha2/permissionclaims"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/cache"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// apiBindings is where a workspace keeps its APIBindings.
var apiBindings = apisv1alpha2.SchemeGroupVersion.WithResource("apibindings")

// bindingMemory is how long a workspace is remembered to bind an export.
// Only that answer is remembered: believing it after the binding went
// costs that workspace refusals of its own deletes, while believing the
// opposite after a binding came would let a delete through.
const bindingMemory = time.Minute

var bindingsUnread = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "depctrl_webhook_dependent_bindings_unread_total",
	Help: "Deletions decided without knowing whether the workspace binds the export that serves the dependent type, because its APIBindings could not be read (the webhook's grant lacks list on apibindings.apis.kcp.io): every object of the dependent's group and resource then counted as a dependent.",
})

func init() { metrics.Registry.MustRegister(bindingsUnread) }

// bindingKey names an export's binding in one workspace.
type bindingKey struct {
	cluster, export string
}

// bindingsRemembered bounds how many bindings are remembered: past it the
// least recently used are forgotten first, so that the workspaces a
// long-running replica ever decided in (deleted ones too) do not pile up.
// One forgotten costs a LIST of that workspace's APIBindings at its next
// deletion.
const bindingsRemembered = 10000

// bindings remembers which workspaces bind which exports, each for
// bindingMemory.
type bindings struct {
	once sync.Once
	lru  *cache.LRUExpireCache // bindingKey → struct{}
}

// bound reports whether k is remembered bound.
func (b *bindings) bound(k bindingKey) bool {
	_, ok := b.cache().Get(k)
	return ok
}

// remember remembers k bound for bindingMemory.
func (b *bindings) remember(k bindingKey) {
	b.cache().Add(k, struct{}{}, bindingMemory)
}

func (b *bindings) cache() *cache.LRUExpireCache {
	b.once.Do(func() { b.lru = cache.NewLRUExpireCache(bindingsRemembered) })
	return b.lru
}

// exportLabel is the value kcp gives the label
// internal.apis.kcp.io/export of every APIBinding of export e. kcp's
// admission sets it when a binding is created and recomputes it whenever an
// update would change it, so no client can make a binding say it binds
// another export than the one it binds.
func exportLabel(e registry.Export) string {
	return permissionclaims.ToAPIBindingExportLabelValue(logicalcluster.Name(e.Cluster), e.Name)
}

// bindsDependentExport reports whether the workspace cluster binds an
// APIExport that serves p's dependent type: only there are its objects of
// that group and resource p's dependents. Elsewhere they belong to a CRD of
// the workspace's own, or to another export, and reference nothing p's
// rules speak of; kcp never serves a bound and an own type of one name in
// one workspace. A binding whose export serves the type but which could not
// bind it (a CRD was there first) still counts: that refuses only the
// workspace's own deletes.
func (f *FrontProxyFinder) bindsDependentExport(ctx context.Context, cluster string, p registry.Protection) (bool, error) {
	if len(p.DependentExports) == 0 {
		return true, nil
	}
	what := p.Dependent.GroupResource().String()
	values := make([]string, len(p.DependentExports))
	for i, e := range p.DependentExports {
		values[i] = exportLabel(e)
		if f.bindings.bound(bindingKey{cluster: cluster, export: values[i]}) {
			return true, nil
		}
	}
	path, err := admission.Path(cluster, apiBindings, "", "")
	if err != nil {
		return false, err
	}
	selector, err := exportSelector(values, what)
	if err != nil {
		return false, err
	}
	res := path.On(f.raw.Get()).
		Param("labelSelector", selector).
		SetHeader("Accept", "application/json").
		Do(ctx)
	if err := res.Error(); err != nil {
		return false, fmt.Errorf("listing the APIBindings of the exports serving %s: %w", what, err)
	}
	body, _ := res.Raw()
	var list struct {
		Items []struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return false, fmt.Errorf("decoding the APIBindings of the exports serving %s: %w", what, err)
	}
	bound := false
	for _, b := range list.Items {
		if v := b.Metadata.Labels[apisv1alpha1.InternalAPIBindingExportLabelKey]; slices.Contains(values, v) {
			bound = true
			f.bindings.remember(bindingKey{cluster: cluster, export: v})
		}
	}
	return bound, nil
}

// exportSelector selects the APIBindings of the exports whose export label
// values are values, which serve the type called what.
func exportSelector(values []string, what string) (string, error) {
	req, err := labels.NewRequirement(apisv1alpha1.InternalAPIBindingExportLabelKey, selection.In, values)
	if err != nil {
		return "", fmt.Errorf("selecting the APIBindings of the exports serving %s: %w", what, err)
	}
	return labels.NewSelector().Add(*req).String(), nil
}

// ownBlockers keeps the blockers found for p in cluster unless the
// workspace does not bind p's dependent export. When its bindings cannot be
// read, every blocker counts.
func (f *FrontProxyFinder) ownBlockers(ctx context.Context, cluster string, p registry.Protection, blockers []Blocker, more int) ([]Blocker, int) {
	if len(blockers) == 0 && more == 0 {
		return blockers, more
	}
	bound, err := f.bindsDependentExport(ctx, cluster, p)
	if err != nil {
		bindingsUnread.Inc()
		return blockers, more
	}
	if !bound {
		return nil, 0
	}
	return blockers, more
}

package decision

// The walk over the workspace tree that finds the places of objects to
// settle (settle.Workspaces): what the settler sweeps when no request has
// shown it where objects are.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// walkPageSize is how many Workspaces, or APIBindings, one page of the walk
// holds: a tenant may give each up to 256 KiB of annotations, so a page is
// at most some 25 MiB however they are written.
const walkPageSize = 100

// workspacesGVR is where a logical cluster keeps its child Workspaces.
var workspacesGVR = schema.GroupVersionResource{Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspaces"}

// DefaultWalkRate is how many requests a second a walk makes at most: a LIST
// page of Workspaces, or of APIBindings to tell whether a workspace serves a
// protected type. A walk of 100 000 workspaces costs some 200 000 requests
// with one protected type, spread over about an hour rather than at once.
const DefaultWalkRate = 50

// WorkspaceWalk implements settle.Workspaces through the front-proxy: from
// the root logical cluster down, it lists each workspace's child Workspaces
// page by page and visits the logical cluster each is scheduled to
// (spec.cluster). The webhook's shard grant (rbac.ShardReader) lets it list
// Workspaces everywhere.
type WorkspaceWalk struct {
	Finder *FrontProxyFinder
	// Root is where the walk starts: "root".
	Root string
	// Limit paces every request of the walk and of Serves; nil for
	// DefaultWalkRate.
	Limit *rate.Limiter
	// Exports gives the APIExports the rules name as serving a protected
	// type (registry.Registry.TargetExports).
	Exports func(target schema.GroupResource) []v1alpha1.APIExportRef

	// clusters remembers the logical cluster of each export's workspace
	// path, for exportMemory.
	clusters sync.Map // path → resolvedPath
	once     sync.Once
}

// limiter is Limit, or DefaultWalkRate's when none is set.
func (w *WorkspaceWalk) limiter() *rate.Limiter {
	w.once.Do(func() {
		if w.Limit == nil {
			w.Limit = rate.NewLimiter(DefaultWalkRate, 1)
		}
	})
	return w.Limit
}

// exportMemory is how long the logical cluster of an export's workspace
// path is remembered: a workspace deleted and created again under the same
// path is another logical cluster.
const exportMemory = time.Minute

type resolvedPath struct {
	cluster string
	until   time.Time
}

// Serves implements settle.Workspaces: cluster binds an APIExport that a
// rule names as serving target, and that binding has bound target (kcp
// labels a binding with its export when it is created, also one that then
// fails to bind because the workspace serves the type already). Only there
// are objects of target's group and resource protected ones: elsewhere
// they are a CRD of the workspace's own, or another export's, which the
// webhook must not label. An export whose workspace path cannot be
// resolved is left out; none resolved is an error.
func (w *WorkspaceWalk) Serves(ctx context.Context, cluster string, target schema.GroupVersionResource) (bool, error) {
	served, err := w.Served(ctx, cluster, []schema.GroupVersionResource{target})
	return served[target], err
}

// Served implements settle.Workspaces: which of targets cluster serves, as
// Serves tells it, read with one LIST of its APIBindings for all of them.
// The error says that some target's exports could not be resolved; the
// others are answered all the same.
func (w *WorkspaceWalk) Served(ctx context.Context, cluster string, targets []schema.GroupVersionResource) (map[schema.GroupVersionResource]bool, error) {
	served := map[schema.GroupVersionResource]bool{}
	exportsOf := map[string][]schema.GroupVersionResource{}
	var values []string
	var unresolved error
	for _, target := range targets {
		resolved := false
		var err error
		for _, ref := range w.Exports(target.GroupResource()) {
			lc, rerr := w.clusterOf(ctx, ref.Path)
			if rerr != nil {
				err = rerr
				continue
			}
			v := exportLabel(registry.Export{Cluster: lc, Name: ref.Name})
			if _, seen := exportsOf[v]; !seen {
				values = append(values, v)
			}
			exportsOf[v] = append(exportsOf[v], target)
			resolved = true
		}
		if !resolved && err != nil {
			unresolved = err
		}
	}
	if len(values) == 0 {
		return served, unresolved
	}
	path, err := admission.Path(cluster, apiBindings, "", "")
	if err != nil {
		return served, err
	}
	selector, err := exportSelector(values, "the protected types")
	if err != nil {
		return served, err
	}
	type binding struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Status struct {
			BoundResources []struct {
				Group    string `json:"group"`
				Resource string `json:"resource"`
			} `json:"boundResources"`
		} `json:"status"`
	}
	err = listPages(ctx, w, path, selector, func(items []binding) bool {
		for _, b := range items {
			for _, target := range exportsOf[b.Metadata.Labels[apisv1alpha1.InternalAPIBindingExportLabelKey]] {
				for _, r := range b.Status.BoundResources {
					if r.Group == target.Group && r.Resource == target.Resource {
						served[target] = true
					}
				}
			}
		}
		return len(served) < len(targets)
	})
	if err != nil {
		return served, fmt.Errorf("listing the APIBindings of the exports serving the protected types: %w", err)
	}
	return served, unresolved
}

// clusterOf resolves a workspace path to its logical cluster, through the
// front-proxy: the name of the LogicalCluster object there.
func (w *WorkspaceWalk) clusterOf(ctx context.Context, workspace string) (string, error) {
	if r, ok := w.clusters.Load(workspace); ok && time.Now().Before(r.(resolvedPath).until) {
		return r.(resolvedPath).cluster, nil
	}
	path, err := admission.WorkspacePath(workspace, logicalClusters, "", "cluster")
	if err != nil {
		return "", err
	}
	var lc struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := w.Finder.get(ctx, path, &lc); err != nil {
		return "", fmt.Errorf("resolving the workspace %s: %w", workspace, err)
	}
	cluster, err := admission.ResolvedCluster(lc.Metadata.Annotations)
	if err != nil {
		return "", fmt.Errorf("resolving the workspace %s: %w", workspace, err)
	}
	w.clusters.Store(workspace, resolvedPath{cluster: cluster, until: time.Now().Add(exportMemory)})
	return cluster, nil
}

// Walk implements settle.Workspaces. A workspace whose children cannot be
// listed is visited all the same and its subtree skipped; the first such
// error is returned after the rest was walked.
func (w *WorkspaceWalk) Walk(ctx context.Context, visit func(cluster string)) error {
	seen := map[string]bool{w.Root: true}
	queue := []string{w.Root}
	var errs []error
	for len(queue) > 0 {
		cluster := queue[0]
		queue = queue[1:]
		visit(cluster)
		children, err := w.children(ctx, cluster)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			errs = append(errs, err)
		}
		for _, c := range children {
			if !seen[c] {
				seen[c] = true
				queue = append(queue, c)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d workspaces could not be walked, first: %w", len(errs), errs[0])
	}
	return nil
}

// children lists the logical clusters of cluster's child Workspaces; a
// Workspace not yet scheduled has none and is left out, as is one whose
// spec.cluster is not a logical cluster name.
func (w *WorkspaceWalk) children(ctx context.Context, cluster string) ([]string, error) {
	path, err := admission.Path(cluster, workspacesGVR, "", "")
	if err != nil {
		return nil, err
	}
	type workspace struct {
		Spec struct {
			Cluster string `json:"cluster"`
		} `json:"spec"`
	}
	var out []string
	err = listPages(ctx, w, path, "", func(items []workspace) bool {
		for _, it := range items {
			if admission.Cluster(it.Spec.Cluster) == nil {
				out = append(out, it.Spec.Cluster)
			}
		}
		return true
	})
	if err != nil {
		return out, fmt.Errorf("listing the workspaces in %s: %w", cluster, err)
	}
	return out, nil
}

// listPages reads the collection at path, filtered by selector, a page of
// walkPageSize at a time, each request paced by the walk's limiter, and
// hands visit each page's items decoded as T until it returns false.
func listPages[T any](ctx context.Context, w *WorkspaceWalk, path admission.Address, selector string, visit func(items []T) bool) error {
	cont := ""
	for {
		if err := w.limiter().Wait(ctx); err != nil {
			return err
		}
		req := path.On(w.Finder.raw.Get()).SetHeader("Accept", "application/json").Param("limit", strconv.Itoa(walkPageSize))
		if selector != "" {
			req = req.Param("labelSelector", selector)
		}
		if cont != "" {
			req = req.Param("continue", cont)
		}
		res := req.Do(ctx)
		if err := res.Error(); err != nil {
			return err
		}
		body, _ := res.Raw()
		var page struct {
			Metadata struct {
				Continue string `json:"continue"`
			} `json:"metadata"`
			Items []T `json:"items"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return fmt.Errorf("decoding %s: %w", path, err)
		}
		if !visit(page.Items) {
			return nil
		}
		if cont = page.Metadata.Continue; cont == "" {
			return nil
		}
	}
}

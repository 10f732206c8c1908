package decision

// The walk over the workspace tree that finds the places of objects to
// settle (settle.Workspaces): what the settler sweeps when no request has
// shown it where objects are.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
)

// workspacesGVR is where a logical cluster keeps its child Workspaces.
var workspacesGVR = schema.GroupVersionResource{Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspaces"}

// DefaultWalkRate is how many LIST pages of Workspaces a walk reads a second
// at most: a walk of 100 000 workspaces costs about as many requests, spread
// over minutes rather than at once.
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
	// Limit paces the LIST requests; nil for DefaultWalkRate.
	Limit *rate.Limiter
}

// Walk implements settle.Workspaces. A workspace whose children cannot be
// listed is visited all the same and its subtree skipped; the first such
// error is returned after the rest was walked.
func (w *WorkspaceWalk) Walk(ctx context.Context, visit func(cluster string)) error {
	limit := w.Limit
	if limit == nil {
		limit = rate.NewLimiter(DefaultWalkRate, 1)
	}
	seen := map[string]bool{w.Root: true}
	queue := []string{w.Root}
	var errs []error
	for len(queue) > 0 {
		cluster := queue[0]
		queue = queue[1:]
		visit(cluster)
		children, err := w.children(ctx, limit, cluster)
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
func (w *WorkspaceWalk) children(ctx context.Context, limit *rate.Limiter, cluster string) ([]string, error) {
	path, err := admission.Path(cluster, workspacesGVR, "", "")
	if err != nil {
		return nil, err
	}
	var out []string
	cont := ""
	for {
		if err := limit.Wait(ctx); err != nil {
			return out, err
		}
		req := path.On(w.Finder.raw.Get()).SetHeader("Accept", "application/json").Param("limit", strconv.Itoa(500))
		if cont != "" {
			req = req.Param("continue", cont)
		}
		res := req.Do(ctx)
		if err := res.Error(); err != nil {
			return out, fmt.Errorf("listing the workspaces in %s: %w", cluster, err)
		}
		body, _ := res.Raw()
		var page struct {
			Metadata struct {
				Continue string `json:"continue"`
			} `json:"metadata"`
			Items []struct {
				Spec struct {
					Cluster string `json:"cluster"`
				} `json:"spec"`
			} `json:"items"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return out, fmt.Errorf("decoding the workspaces in %s: %w", cluster, err)
		}
		for _, it := range page.Items {
			if admission.Cluster(it.Spec.Cluster) == nil {
				out = append(out, it.Spec.Cluster)
			}
		}
		if cont = page.Metadata.Continue; cont == "" {
			return out, nil
		}
	}
}

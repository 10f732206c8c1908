package process

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apisv1alpha1 "github.com/kcp-dev/sdk/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/kcp-dev/sdk/apis/apis/v1alpha2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// Resources read to learn what an export serves. Through the dep-ctrl
// export's virtual workspace they are reachable only by the export's
// read-only claims on them, accepted by the workspace's binding.
var (
	APIExportsGVR         = apisv1alpha2.SchemeGroupVersion.WithResource("apiexports")
	APIResourceSchemasGVR = apisv1alpha1.SchemeGroupVersion.WithResource("apiresourceschemas")
)

// ErrExportNotFound says the workspace has no APIExport of that name.
var ErrExportNotFound = errors.New("APIExport not found")

// getExport reads the APIExport called name.
func getExport(ctx context.Context, client dynamic.Interface, name string) (*unstructured.Unstructured, error) {
	u, err := client.Resource(APIExportsGVR).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w: %s", ErrExportNotFound, name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading APIExport %s: %w", name, err)
	}
	return u, nil
}

// exportTypes reads the APIResourceSchemas the export u serves.
func exportTypes(ctx context.Context, client dynamic.Interface, name string, u *unstructured.Unstructured) (*v1alpha1.ExportTypes, error) {
	export := &apisv1alpha2.APIExport{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, export); err != nil {
		return nil, fmt.Errorf("decoding APIExport %s: %w", name, err)
	}
	out := &v1alpha1.ExportTypes{Name: name}
	for _, rs := range export.Spec.Resources {
		s, err := readSchema(ctx, client, rs.Schema)
		if err != nil {
			return nil, fmt.Errorf("APIExport %s serves %s.%s from APIResourceSchema %s: %w", name, rs.Name, rs.Group, rs.Schema, err)
		}
		r, err := v1alpha1.ServedResourceOf(s)
		if err != nil {
			return nil, fmt.Errorf("APIExport %s: %w", name, err)
		}
		out.Resources = append(out.Resources, r)
	}
	return out, nil
}

func readSchema(ctx context.Context, client dynamic.Interface, name string) (*apisv1alpha1.APIResourceSchema, error) {
	u, err := client.Resource(APIResourceSchemasGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading it: %w", err)
	}
	s := &apisv1alpha1.APIResourceSchema{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil {
		return nil, fmt.Errorf("decoding it: %w", err)
	}
	return s, nil
}

// exportCacheFor is how long a run may reuse what an unchanged export was
// read to serve without reading its APIResourceSchemas again.
const exportCacheFor = time.Minute

// exportFreshFor is how long a run may reuse what an export was read to
// serve without reading the export at all: a burst of runs (rules applied
// together, each run starting the next by the configurations it writes)
// reads each export once instead of once a run, which under the client's
// rate limit held every other request back.
const exportFreshFor = 5 * time.Second

// ExportCache keeps what each export serves between reads, by the export's
// resourceVersion: Read reads the export (one GET) unless it was read less
// than exportFreshFor before, and its schemas (one GET each) only when the
// export changed or the entry is older than exportCacheFor. The controller
// keeps one between runs; the provider one for the checks of a plan, where
// many rules name the same few exports.
// Schemas are immutable; one deleted and created again under the same name
// while the export stays as it is is noticed within exportCacheFor. Only
// exports found are kept: a missing one is looked for at every run.
type ExportCache struct {
	mu      sync.Mutex
	entries map[exportKey]cachedExport
}

type exportKey struct{ cluster, name string }

type cachedExport struct {
	resourceVersion string
	types           *v1alpha1.ExportTypes
	// at is when the schemas were read, checked when the export was last
	// read at resourceVersion.
	at, checked time.Time
}

// fresh returns the cached types of key if the export was read less than
// exportFreshFor before now.
func (c *ExportCache) fresh(key exportKey, now time.Time) (*v1alpha1.ExportTypes, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || now.Sub(e.checked) >= exportFreshFor {
		return nil, false
	}
	return e.types, true
}

// get returns the cached types of key if they were read at resourceVersion
// less than exportCacheFor before now, and notes that the export was read
// at now.
func (c *ExportCache) get(key exportKey, resourceVersion string, now time.Time) (*v1alpha1.ExportTypes, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || e.resourceVersion != resourceVersion || now.Sub(e.at) >= exportCacheFor {
		return nil, false
	}
	e.checked = now
	c.entries[key] = e
	return e.types, true
}

func (c *ExportCache) put(key exportKey, resourceVersion string, types *v1alpha1.ExportTypes, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[exportKey]cachedExport{}
	}
	c.entries[key] = cachedExport{resourceVersion: resourceVersion, types: types, at: now, checked: now}
}

// Read reads the export called name in cluster (a logical cluster, or a
// workspace path: whatever client reaches) with client, unless it was read
// moments ago, and its schemas only when the cache has nothing current.
// It only gets objects by name, never lists them. An export that does not
// exist is ErrExportNotFound.
func (c *ExportCache) Read(ctx context.Context, client dynamic.Interface, cluster, name string) (*v1alpha1.ExportTypes, error) {
	key := exportKey{cluster, name}
	if types, ok := c.fresh(key, time.Now()); ok {
		return types, nil
	}
	u, err := getExport(ctx, client, name)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	if types, ok := c.get(key, u.GetResourceVersion(), now); ok {
		return types, nil
	}
	types, err := exportTypes(ctx, client, name, u)
	if err == nil {
		c.put(key, u.GetResourceVersion(), types, now)
	}
	return types, err
}

package process

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/kcp-dev/logicalcluster/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Resources read and written through the virtual workspaces.
var (
	endpointSlicesGVR = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha1", Resource: "apiexportendpointslices"}
	// APIBindingsGVR lists the workspaces that bound the export.
	APIBindingsGVR = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha1", Resource: "apibindings"}
	// WebhookConfigurationsGVR is the resource the export claims for the
	// deletion webhook.
	WebhookConfigurationsGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	// MutatingWebhookConfigurationsGVR is the resource the export claims for
	// the reference index webhook, installed next to the rules.
	MutatingWebhookConfigurationsGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
)

// VirtualWorkspaces reaches the dep-ctrl APIExport's virtual workspaces
// directly: one per shard, each serving the workspaces on that shard that
// bound the export. ListAll never returns a partial view, so a decision to
// delete a webhook configuration is never taken on one.
type VirtualWorkspaces struct {
	// Home talks to the dep-ctrl workspace (where the export lives).
	Home       *rest.Config
	ExportName string

	http *http.Client
}

// NewVirtualWorkspaces returns a reader for the export's virtual workspaces.
func NewVirtualWorkspaces(home *rest.Config, exportName string) (*VirtualWorkspaces, error) {
	hc, err := rest.HTTPClientFor(home)
	if err != nil {
		return nil, fmt.Errorf("building HTTP client: %w", err)
	}
	return &VirtualWorkspaces{Home: home, ExportName: exportName, http: hc}, nil
}

// URLs returns the virtual workspace URLs from the APIExportEndpointSlice
// of the same name as the export. It is empty until some workspace binds
// the export.
func (v *VirtualWorkspaces) URLs(ctx context.Context) ([]string, error) {
	c, err := dynamic.NewForConfigAndClient(rest.CopyConfig(v.Home), v.http)
	if err != nil {
		return nil, err
	}
	slice, err := c.Resource(endpointSlicesGVR).Get(ctx, v.ExportName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading APIExportEndpointSlice %q: %w", v.ExportName, err)
	}
	endpoints, _, _ := unstructured.NestedSlice(slice.Object, "status", "endpoints")
	var urls []string
	for _, e := range endpoints {
		if m, ok := e.(map[string]interface{}); ok {
			if u, _ := m["url"].(string); u != "" {
				urls = append(urls, u)
			}
		}
	}
	sort.Strings(urls)
	return urls, nil
}

// Client returns a dynamic client for cluster ("*" for all) at the virtual
// workspace url.
func (v *VirtualWorkspaces) Client(url, cluster string) (dynamic.Interface, error) {
	return dynamic.NewForConfigAndClient(v.clusterConfig(url, cluster), v.http)
}

// clusterConfig is the configuration of a client of cluster ("*" for all)
// at the virtual workspace url.
func (v *VirtualWorkspaces) clusterConfig(url, cluster string) *rest.Config {
	cfg := rest.CopyConfig(v.Home)
	cfg.Host = strings.TrimSuffix(url, "/") + "/clusters/" + cluster
	return cfg
}

// ShardObject is something read through a wildcard: the object and where it lives.
type ShardObject struct {
	URL     string
	Cluster string
	Obj     *unstructured.Unstructured
}

// ListAll lists gvr across every workspace of every virtual workspace. Any
// failure fails the whole list.
func (v *VirtualWorkspaces) ListAll(ctx context.Context, urls []string, gvr schema.GroupVersionResource) ([]ShardObject, error) {
	var out []ShardObject
	for _, url := range urls {
		objs, err := v.ListShard(ctx, url, gvr)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// ListShard lists gvr across every workspace of one virtual workspace (one
// shard), so that a caller can tell which shard failed and keep what the
// others returned.
func (v *VirtualWorkspaces) ListShard(ctx context.Context, url string, gvr schema.GroupVersionResource) ([]ShardObject, error) {
	c, err := v.Client(url, "*")
	if err != nil {
		return nil, err
	}
	var out []ShardObject
	err = eachPage(func(opts metav1.ListOptions) (string, error) {
		list, err := c.Resource(gvr).List(ctx, opts)
		if err != nil {
			return "", err
		}
		for i := range list.Items {
			item := &list.Items[i]
			out = append(out, ShardObject{URL: url, Cluster: logicalcluster.From(item).String(), Obj: item})
		}
		return list.GetContinue(), nil
	})
	if err != nil && !notServedYet(gvr, err) {
		return nil, fmt.Errorf("listing %s at %s: %w", gvr.GroupResource(), url, err)
	}
	return out, nil
}

// eachPage calls list for every page of a list, 500 objects at a time:
// first without a continue token, then with the one each page returns,
// until one returns none or list fails.
func eachPage(list func(opts metav1.ListOptions) (continueToken string, err error)) error {
	opts := metav1.ListOptions{Limit: 500}
	for {
		next, err := list(opts)
		if err != nil || next == "" {
			return err
		}
		opts.Continue = next
	}
}

// notServedYet reports whether err, from a list of gvr across one virtual
// workspace, means that the shard has no object of it: a resource the export
// only claims is served there once some workspace on that shard accepted the
// claim, and answers 404 until then.
func notServedYet(gvr schema.GroupVersionResource, err error) bool {
	return apierrors.IsNotFound(err) && (gvr == WebhookConfigurationsGVR || gvr == MutatingWebhookConfigurationsGVR)
}

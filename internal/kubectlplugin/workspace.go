package kubectlplugin

// The workspace a graph is read from, through the kubeconfig's server: its
// APIBindings say which types it binds, the metadata of their objects
// which objects there are, and a dry-run deletion of each what references
// it.

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/depctrl/terraform-provider-depctrl/internal/blockers"
)

// apiBindings is where a kcp workspace keeps its APIBindings.
var apiBindings = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha2", Resource: "apibindings"}

// listPage is how many objects one LIST returns.
const listPage = 500

// liveWorkspace reads the workspace the flags name.
type liveWorkspace struct {
	dyn    dynamic.Interface
	meta   metadata.Interface
	mapper meta.RESTMapper
}

func newLiveWorkspace(flags *genericclioptions.ConfigFlags) (*liveWorkspace, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	mapper, err := flags.ToRESTMapper()
	if err != nil {
		return nil, fmt.Errorf("discovering the workspace's types: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building a client: %w", err)
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building a client: %w", err)
	}
	return &liveWorkspace{dyn: dyn, meta: md, mapper: mapper}, nil
}

// types reads the resources every APIBinding of the workspace has bound.
func (w *liveWorkspace) types(ctx context.Context) ([]apiType, error) {
	list, err := w.dyn.Resource(apiBindings).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the workspace's APIBindings (is the server a kcp workspace?): %w", err)
	}
	seen := map[schema.GroupResource]bool{}
	var out []apiType
	for _, b := range list.Items {
		bound, _, _ := unstructured.NestedSlice(b.Object, "status", "boundResources")
		for _, r := range bound {
			m, _ := r.(map[string]interface{})
			group, _ := m["group"].(string)
			resource, _ := m["resource"].(string)
			gr := schema.GroupResource{Group: group, Resource: resource}
			if resource == "" || seen[gr] {
				continue
			}
			seen[gr] = true
			t, err := w.typeOf(gr)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		}
	}
	return out, nil
}

func (w *liveWorkspace) typeOf(gr schema.GroupResource) (apiType, error) {
	gvr, err := w.mapper.ResourceFor(gr.WithVersion(""))
	if err != nil {
		return apiType{}, fmt.Errorf("finding the bound type %s: %w", gr, err)
	}
	kind, err := w.mapper.KindFor(gvr)
	if err != nil {
		return apiType{}, fmt.Errorf("finding the kind of %s: %w", gr, err)
	}
	mapping, err := w.mapper.RESTMapping(kind.GroupKind(), kind.Version)
	if err != nil {
		return apiType{}, fmt.Errorf("finding the scope of %s: %w", gr, err)
	}
	return apiType{resource: gvr, kind: kind.Kind, namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace}, nil
}

// list reads the metadata of t's objects in namespace, page by page.
func (w *liveWorkspace) list(ctx context.Context, t apiType, namespace string) ([]Object, error) {
	var out []Object
	opts := metav1.ListOptions{Limit: listPage}
	for {
		page, err := w.meta.Resource(t.resource).Namespace(namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, item := range page.Items {
			out = append(out, Object{Group: t.resource.Group, Version: t.resource.Version, Resource: t.resource.Resource, Kind: t.kind,
				Namespace: item.Namespace, Name: item.Name})
		}
		if opts.Continue = page.Continue; opts.Continue == "" {
			return out, nil
		}
	}
}

// ask deletes o as a dry run (blockers.Ask).
func (w *liveWorkspace) ask(ctx context.Context, o Object) (blockers.Verdict, error) {
	gvr := schema.GroupVersionResource{Group: o.Group, Version: o.Version, Resource: o.Resource}
	return blockers.Ask(ctx, w.dyn.Resource(gvr).Namespace(o.Namespace), o.Name)
}

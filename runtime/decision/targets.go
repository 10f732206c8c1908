package decision

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/depctrl/terraform-provider-depctrl/runtime/frontproxy"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

// The front-proxy implementation of index.Targets. A referenced object is looked
// for in the dependent's namespace first and then cluster-wide: a rule does
// not say whether its dependency is namespaced.

// Target implements Targets with a GET.
func (f *FrontProxyFinder) Target(ctx context.Context, cluster, namespace string, target schema.GroupVersionResource, name string) (index.TargetState, error) {
	return f.eachScope(namespace, func(ns string) *rest.Request {
		return f.raw.Get().AbsPath(frontproxy.Path(cluster, target, ns, name)...)
	}, ctx, target, name)
}

// Annotate implements Targets with a JSON merge patch. The same patch
// removes the settled label (package settle): an object that gains a
// reference, or may, is no longer proven unreferenced, and its deletion goes
// to the webhook again from the moment the intent is recorded.
func (f *FrontProxyFinder) Annotate(ctx context.Context, cluster, namespace string, target schema.GroupVersionResource, name string, set map[string]*string) (index.TargetState, error) {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": set, "labels": map[string]any{settle.SettledLabel: nil}}})
	if err != nil {
		return index.TargetState{}, fmt.Errorf("encoding the annotations of %s %s: %w", target.GroupResource(), name, err)
	}
	return f.eachScope(namespace, func(ns string) *rest.Request {
		return f.raw.Patch(types.MergePatchType).AbsPath(frontproxy.Path(cluster, target, ns, name)...).Body(body)
	}, ctx, target, name)
}

// Withdraw implements Targets with a JSON patch that tests the value before
// it removes the key, so that it never removes what someone wrote since.
func (f *FrontProxyFinder) Withdraw(ctx context.Context, cluster, namespace string, target schema.GroupVersionResource, name, key, value string) error {
	path := "/metadata/annotations/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
	body, err := json.Marshal([]map[string]any{{"op": "test", "path": path, "value": value}, {"op": "remove", "path": path}})
	if err != nil {
		return fmt.Errorf("encoding the withdrawal from %s %s: %w", target.GroupResource(), name, err)
	}
	_, err = f.eachScope(namespace, func(ns string) *rest.Request {
		return f.raw.Patch(types.JSONPatchType).AbsPath(frontproxy.Path(cluster, target, ns, name)...).Body(body)
	}, ctx, target, name)
	return err
}

// eachScope sends the request built for the namespace, then cluster-wide,
// until one finds the object.
func (f *FrontProxyFinder) eachScope(namespace string, build func(ns string) *rest.Request, ctx context.Context, target schema.GroupVersionResource, name string) (index.TargetState, error) {
	scopes := []string{namespace}
	if namespace != "" {
		scopes = append(scopes, "")
	}
	for _, ns := range scopes {
		res := build(ns).SetHeader("Accept", "application/json").Do(ctx)
		// Error, unlike Raw, decodes the server's Status, so that a
		// refusal names what was refused.
		err := res.Error()
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return index.TargetState{}, fmt.Errorf("%s %s: %w", target.GroupResource(), name, err)
		}
		body, _ := res.Raw()
		var o struct {
			Metadata struct {
				DeletionTimestamp *metav1.Time      `json:"deletionTimestamp"`
				Annotations       map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(body, &o); err != nil {
			return index.TargetState{}, fmt.Errorf("decoding %s %s: %w", target.GroupResource(), name, err)
		}
		return index.TargetState{Found: true, Deleting: o.Metadata.DeletionTimestamp != nil, Annotations: o.Metadata.Annotations}, nil
	}
	return index.TargetState{}, nil
}

package decision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/runtime/settle"
)

// The front-proxy implementation of index.Targets. A rule does not say
// whether its dependency is namespaced: a referenced object is looked for
// in the dependent's namespace first and then cluster-wide. A cluster-scoped
// dependent references the objects of that name in the whole workspace (the
// deletion decision finds it from any namespace), so its reference is
// recorded on every one of them, whichever namespace it is in.

// Target implements Targets with a GET.
func (f *FrontProxyFinder) Target(ctx context.Context, cluster, namespace string, target schema.GroupVersionResource, name string) (index.TargetState, error) {
	return f.eachScope(ctx, cluster, namespace, target, name, targetRequest{build: func(path admission.Address) *rest.Request {
		return path.On(f.raw.Get())
	}})
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
	return f.eachScope(ctx, cluster, namespace, target, name, targetRequest{build: func(path admission.Address) *rest.Request {
		return path.On(f.raw.Patch(types.MergePatchType)).Body(body)
	}})
}

// Withdraw implements Targets with a JSON patch that tests the value before
// it removes the key, so that it never removes what someone wrote since. An
// object that does not hold the value is left as it is, and that is no
// error: there is nothing of this intent to withdraw from it.
func (f *FrontProxyFinder) Withdraw(ctx context.Context, cluster, namespace string, target schema.GroupVersionResource, name, key, value string) error {
	path := "/metadata/annotations/" + jsonPointer.Replace(key)
	body, err := json.Marshal([]map[string]any{{"op": "test", "path": path, "value": value}, {"op": "remove", "path": path}})
	if err != nil {
		return fmt.Errorf("encoding the withdrawal from %s %s: %w", target.GroupResource(), name, err)
	}
	_, err = f.eachScope(ctx, cluster, namespace, target, name, targetRequest{
		build: func(path admission.Address) *rest.Request {
			return path.On(f.raw.Patch(types.JSONPatchType)).Body(body)
		},
		leftAsIs: failedTest,
	})
	return err
}

// jsonPointer escapes a key as one segment of a JSON pointer (RFC 6901).
var jsonPointer = strings.NewReplacer("~", "~0", "/", "~1")

// failedTest reports whether err is the API server's refusal of a JSON
// patch that does not apply, here because its test found another value or
// none: 422 Invalid without causes. An object that the patch would leave
// invalid is refused with the fields at fault as causes, and is an error.
func failedTest(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d == nil || len(d.Causes) == 0
}

// targetRequest is the request eachScope sends to each object.
type targetRequest struct {
	// build points the request at the object's path.
	build func(path admission.Address) *rest.Request
	// leftAsIs, when set, tells the refusals that mean the object is
	// there and the request had nothing to change on it.
	leftAsIs func(error) bool
}

// eachScope sends the request to the object's path in the namespace, then
// cluster-wide, until one finds the object. Without a namespace (a
// cluster-scoped dependent) and no cluster-scoped object of that name, it
// sends it to every namespaced object of that name: each is sent it
// whatever the others answered, so that a failure on one leaves none of the
// others unread or unwritten, and the failures are returned joined.
func (f *FrontProxyFinder) eachScope(ctx context.Context, cluster, namespace string, target schema.GroupVersionResource, name string, req targetRequest) (index.TargetState, error) {
	scopes := []string{namespace}
	if namespace != "" {
		scopes = append(scopes, "")
	}
	for _, ns := range scopes {
		state, err := f.send(ctx, cluster, ns, target, name, req)
		if err != nil || state.Found {
			return state, err
		}
	}
	if namespace != "" {
		return index.TargetState{}, nil
	}
	namespaces, err := f.namespacesOf(ctx, cluster, target, name)
	if err != nil {
		return index.TargetState{}, err
	}
	all := index.TargetState{AnyNamespace: true}
	var errs []error
	for _, ns := range namespaces {
		state, err := f.send(ctx, cluster, ns, target, name, req)
		if err != nil {
			errs = append(errs, fmt.Errorf("in namespace %s: %w", ns, err))
			continue
		}
		if !state.Found {
			continue
		}
		// The objects' annotations together: an intent a write recorded
		// on all of them has one value everywhere, so whichever object
		// still holds it tells the value (a withdrawal tests it).
		for k, v := range state.Annotations {
			if _, ok := all.Annotations[k]; !ok {
				if all.Annotations == nil {
					all.Annotations = map[string]string{}
				}
				all.Annotations[k] = v
			}
		}
		all.Found = true
		all.Deleting = all.Deleting || state.Deleting
	}
	if len(errs) > 0 {
		return index.TargetState{}, errors.Join(errs...)
	}
	return all, nil
}

// send sends the request to the object called name in namespace ("",
// cluster-wide); an object that is not there is not found, not an error,
// and one that req leaves as it is is found, with no state read.
func (f *FrontProxyFinder) send(ctx context.Context, cluster, namespace string, target schema.GroupVersionResource, name string, req targetRequest) (index.TargetState, error) {
	path, err := admission.Path(cluster, target, namespace, name)
	if err != nil {
		return index.TargetState{}, err
	}
	res := req.build(path).SetHeader("Accept", "application/json").Do(ctx)
	// Error, unlike Raw, decodes the server's Status, so that a refusal
	// names what was refused.
	err = res.Error()
	if apierrors.IsNotFound(err) {
		return index.TargetState{}, nil
	}
	if err != nil && req.leftAsIs != nil && req.leftAsIs(err) {
		return index.TargetState{Found: true}, nil
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

// namespacesOf returns the namespaces that hold an object of target called
// name, read with one LIST across the workspace (metadata only).
func (f *FrontProxyFinder) namespacesOf(ctx context.Context, cluster string, target schema.GroupVersionResource, name string) ([]string, error) {
	if err := admission.Name(name); err != nil {
		// Not a name any object can have.
		return nil, nil
	}
	path, err := admission.Path(cluster, target, "", "")
	if err != nil {
		return nil, err
	}
	res := path.On(f.raw.Get()).SetHeader("Accept", metadataOnly).Param("fieldSelector", fields.OneTermEqualSelector("metadata.name", name).String()).Do(ctx)
	err = res.Error()
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s called %s: %w", target.GroupResource(), name, err)
	}
	body, _ := res.Raw()
	var list metav1.PartialObjectMetadataList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decoding the list of %s called %s: %w", target.GroupResource(), name, err)
	}
	var out []string
	for _, o := range list.Items {
		if o.Name == name && o.Namespace != "" {
			out = append(out, o.Namespace)
		}
	}
	return out, nil
}

package provider

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// kubeKinds are the kinds the runtime renderer produces, and where they live.
var kubeKinds = map[string]struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}{
	"Namespace":           {schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, false},
	"ServiceAccount":      {schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, true},
	"Secret":              {schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, true},
	"ConfigMap":           {schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, true},
	"Service":             {schema.GroupVersionResource{Version: "v1", Resource: "services"}, true},
	"Deployment":          {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, true},
	"NetworkPolicy":       {schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}, true},
	"PodDisruptionBudget": {schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}, true},
}

// Drift markers in the objects attribute, in place of a fingerprint.
const (
	objectMissing = "missing"
	objectChanged = "changed outside Terraform"
)

// objectKey names an object in the objects attribute: Kind/name (every
// object of one runtime is in the same namespace).
func objectKey(u *unstructured.Unstructured) string { return u.GetKind() + "/" + u.GetName() }

// fingerprint digests an object as applied (redacted); the objects
// attribute holds one per object, so that any change, ours or someone
// else's, shows in a plan.
func fingerprint(u *unstructured.Unstructured) string {
	data, _ := json.Marshal(redact(u).Object) // maps marshal with sorted keys
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:8])
}

// redact replaces the values of a Secret's data with their digests. What
// the provider keeps of an applied Secret (to notice changes) then holds
// no key or credential: Terraform state never does, unless the user wrote
// it into the configuration.
func redact(u *unstructured.Unstructured) *unstructured.Unstructured {
	if u.GetKind() != "Secret" {
		return u
	}
	out := u.DeepCopy()
	data, _, _ := unstructured.NestedMap(out.Object, "data")
	for k, v := range data {
		s, _ := v.(string) // base64, as the API returns it
		if strings.HasPrefix(s, "sha256:") {
			continue // already redacted ("sha256:" is not base64)
		}
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			raw = []byte(s)
		}
		sum := sha256.Sum256(raw)
		data[k] = "sha256:" + hex.EncodeToString(sum[:])
	}
	if data != nil {
		_ = unstructured.SetNestedMap(out.Object, data, "data")
	}
	return out
}

func kubeResource(d dynamic.Interface, u *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	k, ok := kubeKinds[u.GetKind()]
	if !ok {
		return nil, fmt.Errorf("no API known for kind %q", u.GetKind())
	}
	if k.namespaced {
		return d.Resource(k.gvr).Namespace(u.GetNamespace()), nil
	}
	return d.Resource(k.gvr), nil
}

// applyKube server-side applies objs in order, taking over fields someone
// changed by hand: that is how an apply repairs drift.
func applyKube(ctx context.Context, d dynamic.Interface, objs []*unstructured.Unstructured) error {
	for _, u := range objs {
		ri, err := kubeResource(d, u)
		if err != nil {
			return err
		}
		data, err := json.Marshal(u.Object)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", objectKey(u), err)
		}
		force := true
		if _, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: &force}); err != nil {
			return fmt.Errorf("applying %s in namespace %q: %w", objectKey(u), u.GetNamespace(), err)
		}
	}
	return nil
}

// deleteKube deletes objs in reverse order and waits until the namespaced
// ones are gone. A Namespace is only asked to go: Kubernetes finalizes it
// in the background, and nothing of the runtime is left in it by then.
func deleteKube(ctx context.Context, d dynamic.Interface, timeout time.Duration, objs []*unstructured.Unstructured) error {
	for i := len(objs) - 1; i >= 0; i-- {
		u := objs[i]
		ri, err := kubeResource(d, u)
		if err != nil {
			return err
		}
		// Background: the garbage collector removes ReplicaSets and Pods
		// after the Deployment is gone, as kubectl delete does.
		policy := metav1.DeletePropagationBackground
		if err := ri.Delete(ctx, u.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s in namespace %q: %w", objectKey(u), u.GetNamespace(), err)
		}
	}
	for _, u := range objs {
		if u.GetKind() == "Namespace" {
			continue
		}
		ri, _ := kubeResource(d, u)
		err := waitGone(ctx, timeout, objectKey(u), func(ctx context.Context) error {
			_, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// liveState compares each applied object with the cluster: its fingerprint
// when every field that was applied still has the applied value, or a drift
// marker. Fields the server or other controllers add do not count.
func liveState(ctx context.Context, d dynamic.Interface, applied []*unstructured.Unstructured) (map[string]string, int, error) {
	out := make(map[string]string, len(applied))
	missing := 0
	for _, u := range applied {
		ri, err := kubeResource(d, u)
		if err != nil {
			return nil, 0, err
		}
		live, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			out[objectKey(u)] = objectMissing
			missing++
		case err != nil:
			return nil, 0, fmt.Errorf("reading %s in namespace %q: %w", objectKey(u), u.GetNamespace(), err)
		case live.GetDeletionTimestamp() != nil:
			out[objectKey(u)] = objectMissing
			missing++
		case !contains(redact(live).Object, redact(u).Object):
			out[objectKey(u)] = objectChanged
		default:
			out[objectKey(u)] = fingerprint(u)
		}
	}
	return out, missing, nil
}

// contains reports whether every field of want is in got with the same
// value. Lists must have the same length, element by element.
func contains(got, want interface{}) bool {
	switch w := want.(type) {
	case map[string]interface{}:
		g, ok := got.(map[string]interface{})
		if !ok {
			return len(w) == 0 && got == nil
		}
		for k, wv := range w {
			gv, present := g[k]
			if !present {
				if isEmpty(wv) {
					continue
				}
				return false
			}
			if !contains(gv, wv) {
				return false
			}
		}
		return true
	case []interface{}:
		g, ok := got.([]interface{})
		if !ok || len(g) != len(w) {
			return len(w) == 0 && got == nil
		}
		for i := range w {
			if !contains(g[i], w[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(normalizeNumber(got), normalizeNumber(want))
	}
}

// isEmpty is true for values the API server drops on the way in.
func isEmpty(v interface{}) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]interface{}:
		return len(x) == 0
	case []interface{}:
		return len(x) == 0
	case string:
		return x == ""
	case bool:
		return !x
	}
	return false
}

func normalizeNumber(v interface{}) interface{} {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int32:
		return int64(n)
	case float64:
		if n == float64(int64(n)) {
			return int64(n)
		}
	}
	return v
}

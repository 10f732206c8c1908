package provider

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// The manifest of a depctrl_object: one Kubernetes object as JSON or YAML,
// what names it (objectRef), the drift fingerprint over the fields it sets,
// and the resource's import ID.

// objectRef names the object a manifest describes. Group, kind, namespace
// and name say which object it is (another is another object: the resource
// is replaced); the version only says how it is read and written.
type objectRef struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
}

func (r objectRef) groupVersion() schema.GroupVersion {
	gv, _ := schema.ParseGroupVersion(r.APIVersion)
	return gv
}

func (r objectRef) groupKind() schema.GroupKind {
	return schema.GroupKind{Group: r.groupVersion().Group, Kind: r.Kind}
}

// sameObject reports whether r and o name the same object, whatever
// version each reads it in.
func (r objectRef) sameObject(o objectRef) bool {
	return r.groupKind() == o.groupKind() && r.Namespace == o.Namespace && r.Name == o.Name
}

// String names the object for people: Kind namespace/name (apiVersion).
func (r objectRef) String() string {
	n := r.Name
	if r.Namespace != "" {
		n = r.Namespace + "/" + n
	}
	return fmt.Sprintf("%s %s (%s)", r.Kind, n, r.APIVersion)
}

// manifestOwnedByServer are the fields of metadata that the API server
// sets: a manifest that sets them is refused, as apply would ignore or
// refuse them, and the fingerprint would never match.
var manifestOwnedByServer = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
	"deletionGracePeriodSeconds", "managedFields", "selfLink"}

// parseManifest decodes a manifest: exactly one object, as JSON or YAML,
// with apiVersion, kind and metadata.name. The error says what is wrong,
// for people, without repeating the manifest.
func parseManifest(manifest string) (*unstructured.Unstructured, objectRef, error) {
	var docs [][]byte
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, objectRef{}, fmt.Errorf("cannot read it as YAML or JSON: %v", err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		docs = append(docs, doc)
	}
	switch {
	case len(docs) == 0:
		return nil, objectRef{}, errors.New("it is empty: it must hold one object")
	case len(docs) > 1:
		return nil, objectRef{}, fmt.Errorf("it holds %d YAML documents: it must hold exactly one object (use one depctrl_object per object)", len(docs))
	}
	data, err := yaml.YAMLToJSON(docs[0])
	if err != nil {
		return nil, objectRef{}, fmt.Errorf("cannot read it as YAML or JSON: %v", err)
	}
	var v interface{}
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, objectRef{}, fmt.Errorf("cannot read it as YAML or JSON: %v", err)
	}
	obj, ok := v.(map[string]interface{})
	if !ok {
		return nil, objectRef{}, fmt.Errorf("it is %s, not an object with apiVersion, kind and metadata", describeJSON(v))
	}
	u := &unstructured.Unstructured{Object: obj}
	ref, err := manifestRef(obj)
	if err != nil {
		return nil, objectRef{}, err
	}
	if err := manifestSettable(u, ref); err != nil {
		return nil, objectRef{}, err
	}
	return u, ref, nil
}

// stripComments drops YAML comment lines, so that a document of only
// comments counts as empty.
func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' && !bytes.Equal(t, []byte("---")) {
			out = append(out, line)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

func describeJSON(v interface{}) string {
	switch v.(type) {
	case nil:
		return "null"
	case []interface{}:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// manifestRef reads what names the object, and checks each part as the API
// server would.
func manifestRef(obj map[string]interface{}) (objectRef, error) {
	str := func(what string, fields ...string) (string, error) {
		v, found, err := unstructured.NestedFieldNoCopy(obj, fields...)
		if err != nil || !found || v == nil {
			return "", fmt.Errorf("it has no %s", what)
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("its %s is %s, not a string", what, describeJSON(v))
		}
		if s == "" {
			return "", fmt.Errorf("its %s is empty", what)
		}
		return s, nil
	}
	var ref objectRef
	var err error
	if ref.APIVersion, err = str("apiVersion", "apiVersion"); err != nil {
		return ref, err
	}
	gv, perr := schema.ParseGroupVersion(ref.APIVersion)
	if perr != nil || gv.Version == "" {
		return ref, fmt.Errorf("its apiVersion %q is not <group>/<version> (or <version> for the core group), such as network.example.io/v1", ref.APIVersion)
	}
	if ref.Kind, err = str("kind", "kind"); err != nil {
		return ref, err
	}
	if strings.ContainsAny(ref.Kind, "/ ") {
		return ref, fmt.Errorf("its kind %q is not a kind, such as VirtualMachine", ref.Kind)
	}
	if _, ok := obj["metadata"].(map[string]interface{}); !ok {
		if _, present := obj["metadata"]; present {
			return ref, fmt.Errorf("its metadata is %s, not an object with a name", describeJSON(obj["metadata"]))
		}
		return ref, errors.New("it has no metadata: it needs at least metadata.name")
	}
	if ref.Name, err = str("metadata.name", "metadata", "name"); err != nil {
		return ref, err
	}
	// The API server checks a name by its kind (most are DNS subdomains,
	// RBAC names may hold ':'); none may be a path segment other than itself.
	if ref.Name == "." || ref.Name == ".." || strings.ContainsAny(ref.Name, "/%") {
		return ref, fmt.Errorf("its metadata.name %q cannot name an object: it may not be . or .. or hold / or %%", ref.Name)
	}
	if ns, found, _ := unstructured.NestedFieldNoCopy(obj, "metadata", "namespace"); found && ns != nil {
		s, ok := ns.(string)
		if !ok {
			return ref, fmt.Errorf("its metadata.namespace is %s, not a string", describeJSON(ns))
		}
		if s != "" {
			if problems := validation.IsDNS1123Label(s); len(problems) > 0 {
				return ref, fmt.Errorf("its metadata.namespace %q is not a namespace name: %s", s, strings.Join(problems, "; "))
			}
		}
		ref.Namespace = s
	}
	return ref, nil
}

// manifestSettable refuses what apply cannot set: a list of objects, the
// status, metadata the API server owns, and the deferral record only the
// dependency webhook may write.
func manifestSettable(u *unstructured.Unstructured, ref objectRef) error {
	if _, ok := u.Object["items"].([]interface{}); ok && strings.HasSuffix(ref.Kind, "List") {
		return fmt.Errorf("it is a %s, a list of objects: it must hold exactly one object (use one depctrl_object per object)", ref.Kind)
	}
	if _, ok := u.Object["status"]; ok {
		return errors.New("it sets status, which the object's controller writes, not apply: leave status out")
	}
	meta, _ := u.Object["metadata"].(map[string]interface{})
	for _, f := range manifestOwnedByServer {
		if _, ok := meta[f]; ok {
			return fmt.Errorf("it sets metadata.%s, which the API server sets: leave it out", f)
		}
	}
	if _, ok := u.GetAnnotations()[v1alpha1.DeletionDeferredAnnotation]; ok {
		return fmt.Errorf("it sets the annotation %s, which only the dependency webhook writes (to defer a deletion, set %s: \"true\")",
			v1alpha1.DeletionDeferredAnnotation, v1alpha1.DeferDeletionAnnotation)
	}
	if _, ok := u.GetLabels()[v1alpha1.DeletionDeferredLabel]; ok {
		return fmt.Errorf("it sets the label %s, which only the dependency webhook writes", v1alpha1.DeletionDeferredLabel)
	}
	return nil
}

// minimalManifest is the manifest of an imported object: what names it,
// nothing else. The next plan updates it to the configured manifest.
func minimalManifest(ref objectRef) string {
	meta := map[string]interface{}{"name": ref.Name}
	if ref.Namespace != "" {
		meta["namespace"] = ref.Namespace
	}
	data, _ := json.Marshal(map[string]interface{}{"apiVersion": ref.APIVersion, "kind": ref.Kind, "metadata": meta})
	return string(data)
}

// Drift. The fingerprint digests the values of an object at exactly the
// field paths the manifest sets: the planned one digests the manifest's own
// values, the one in state the live object's, so they differ when a field
// the manifest sets was changed outside Terraform. Fields the manifest
// does not set (defaults, status, other field managers' labels and
// annotations) never count.

// fingerprintOf digests obj at the paths manifest sets.
func fingerprintOf(obj, manifest map[string]interface{}) string {
	data, _ := json.Marshal(normalizeJSON(project(obj, manifest))) // maps marshal with sorted keys
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// manifestFingerprint is what the fingerprint of an object that holds
// exactly what manifest sets is: the planned value.
func manifestFingerprint(manifest map[string]interface{}) string {
	return fingerprintOf(manifest, manifest)
}

// project returns the parts of got at the paths want sets. A map key want
// sets and got lacks is left out, unless want's value is empty (the API
// server drops an empty map, list or string, or false, on the way in), so
// that a missing field differs from any value. Lists are compared element
// by element; got's elements past want's count as they are.
func project(got, want interface{}) interface{} {
	switch w := want.(type) {
	case map[string]interface{}:
		g, ok := got.(map[string]interface{})
		if !ok {
			if got == nil && len(w) == 0 {
				return w
			}
			return got
		}
		out := make(map[string]interface{}, len(w))
		for k, wv := range w {
			gv, present := g[k]
			switch {
			case present:
				out[k] = project(gv, wv)
			case isEmpty(wv):
				out[k] = wv
			}
		}
		return out
	case []interface{}:
		g, ok := got.([]interface{})
		if !ok {
			if got == nil && len(w) == 0 {
				return w
			}
			return got
		}
		out := make([]interface{}, len(g))
		for i := range g {
			if i < len(w) {
				out[i] = project(g[i], w[i])
			} else {
				out[i] = g[i]
			}
		}
		return out
	default:
		return got
	}
}

// normalizeJSON makes numbers compare by value: an int64 from the API
// server and the float64 of the same number in a manifest digest alike.
func normalizeJSON(v interface{}) interface{} {
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out interface{}
	if json.Unmarshal(data, &out) != nil {
		return v
	}
	return out
}

// driftedPaths lists the field paths manifest sets whose values obj does
// not hold, for a message: .spec.cidr, .metadata.labels.tier.
func driftedPaths(obj, manifest map[string]interface{}) []string {
	var out []string
	var walk func(p string, got, want interface{})
	walk = func(p string, got, want interface{}) {
		switch w := want.(type) {
		case map[string]interface{}:
			g, ok := got.(map[string]interface{})
			if !ok {
				if got != nil || len(w) > 0 {
					out = append(out, p)
				}
				return
			}
			for k, wv := range w {
				gv, present := g[k]
				switch {
				case present:
					walk(p+"."+k, gv, wv)
				case !isEmpty(wv):
					out = append(out, p+"."+k)
				}
			}
		default:
			a, _ := json.Marshal(normalizeJSON(project(got, want)))
			b, _ := json.Marshal(normalizeJSON(project(want, want)))
			if !bytes.Equal(a, b) {
				out = append(out, p)
			}
		}
	}
	walk("", obj, manifest)
	sort.Strings(out)
	return out
}

// The import ID: <workspace_path>/<apiVersion>/<kind>/<namespace>/<name>,
// the namespace empty for a cluster-scoped object. The apiVersion holds a
// slash of its own for a named group (network.example.io/v1) and none for
// the core group (v1); no other part can hold one, so an ID of six parts
// has a named group and one of five the core group.

func formatObjectID(workspace string, ref objectRef) string {
	return strings.Join([]string{workspace, ref.APIVersion, ref.Kind, ref.Namespace, ref.Name}, "/")
}

const objectIDFormat = "<workspace_path>/<apiVersion>/<kind>/<namespace>/<name>"

func parseObjectID(id string) (workspace string, ref objectRef, err error) {
	parts := strings.Split(id, "/")
	switch len(parts) {
	case 5:
		workspace, ref = parts[0], objectRef{APIVersion: parts[1], Kind: parts[2], Namespace: parts[3], Name: parts[4]}
	case 6:
		workspace, ref = parts[0], objectRef{APIVersion: parts[1] + "/" + parts[2], Kind: parts[3], Namespace: parts[4], Name: parts[5]}
	default:
		return "", objectRef{}, fmt.Errorf("%q is not %s, such as root:team-a/network.example.io/v1/VPC/apps/vpc-1 (a cluster-scoped object has an empty namespace: root:team-a/v1/Namespace//apps)", id, objectIDFormat)
	}
	if problem := objectRefProblem(workspace, ref); problem != "" {
		return "", objectRef{}, fmt.Errorf("%q is not %s: %s", id, objectIDFormat, problem)
	}
	return workspace, ref, nil
}

// objectRefProblem checks an imported name as the manifest's is checked.
func objectRefProblem(workspace string, ref objectRef) string {
	if p := workspacePathProblem(workspace); p != "" {
		return fmt.Sprintf("the workspace path %q is %s", workspace, p)
	}
	obj := map[string]interface{}{"apiVersion": ref.APIVersion, "kind": ref.Kind, "metadata": map[string]interface{}{"name": ref.Name, "namespace": ref.Namespace}}
	if _, err := manifestRef(obj); err != nil {
		return strings.Replace(err.Error(), "its ", "the ", 1)
	}
	return ""
}

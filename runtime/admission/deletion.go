package admission

import (
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Deletion is a DELETE admission request as the protection decision reads
// it: what is deleted, where, and by whom, each checked once, here. The
// decision reads nothing of the request but this.
type Deletion struct {
	// Resource is the requested resource; Kind the object's kind.
	Resource schema.GroupVersionResource
	Kind     schema.GroupVersionKind
	// Namespace and Name name the deleted object. A DELETECOLLECTION (a
	// field or label selector, a whole collection, a namespace being
	// emptied, an APIBinding being removed) reaches admission once per item
	// with an empty name, and without a namespace when it spans namespaces:
	// the item itself, in oldObject, then says which object is deleted.
	Namespace, Name string
	// Cluster is the logical cluster of the stored object (ClusterOf).
	Cluster string
	// Meta is the stored object's metadata: its annotations, UID.
	Meta metav1.ObjectMeta
	// User, Groups and Extra are who asks.
	User   string
	Groups []string
	Extra  map[string][]string
	// DryRun: the request must have no side effects.
	DryRun bool
	// Collection: the request is an item of a DELETECOLLECTION (it names
	// no object; Name is its object's).
	Collection bool
	// Options are the request's DeleteOptions; nil when it carries none,
	// or none that decode (they then decide nothing but that the deletion
	// cannot be deferred).
	Options *metav1.DeleteOptions
}

// DeletionOf checks req, a DELETE, and returns what it deletes. A request
// without its stored object, whose object has no name, whose name or
// namespace disagrees with its object or cannot be one, or whose object
// holds no logical cluster, is malformed: the error says why, and nothing
// may be read or written for it.
func DeletionOf(req *admissionv1.AdmissionRequest) (Deletion, error) {
	d := Deletion{
		Resource:  schema.GroupVersionResource(req.Resource),
		Kind:      schema.GroupVersionKind(req.Kind),
		Namespace: req.Namespace,
		Name:      req.Name,
		User:      req.UserInfo.Username,
		Groups:    req.UserInfo.Groups,
		Extra:     ExtraOf(req),
		DryRun:    DryRun(req),
	}
	if len(req.OldObject.Raw) == 0 {
		return d, fmt.Errorf("cannot check %s for dependents: the DELETE request carries no object", d)
	}
	obj := map[string]interface{}{}
	if err := json.Unmarshal(req.OldObject.Raw, &obj); err != nil {
		return d, fmt.Errorf("cannot check %s for dependents: decoding the object: %w", d, err)
	}
	d.Meta = MetaOf(obj)
	d.Collection = d.Name == ""
	if err := d.identify(); err != nil {
		return d, err
	}
	cluster, err := ClusterOf(req, Annotations{OldObject: d.Meta.Annotations})
	if err != nil {
		return d, fmt.Errorf("cannot check %s for dependents: %w", d, err)
	}
	d.Cluster = cluster
	d.Options = deleteOptions(req)
	return d, nil
}

// ExtraOf is the request's user info extra as plain lists.
func ExtraOf(req *admissionv1.AdmissionRequest) map[string][]string {
	if len(req.UserInfo.Extra) == 0 {
		return nil
	}
	out := make(map[string][]string, len(req.UserInfo.Extra))
	for k, v := range req.UserInfo.Extra {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// deleteOptions decodes the request's DeleteOptions; nil when there are
// none or they do not decode.
func deleteOptions(req *admissionv1.AdmissionRequest) *metav1.DeleteOptions {
	if len(req.Options.Raw) == 0 {
		return nil
	}
	var o metav1.DeleteOptions
	if err := json.Unmarshal(req.Options.Raw, &o); err != nil {
		return nil
	}
	return &o
}

// identify names the deleted object after its metadata where the request
// does not (an item of a DELETECOLLECTION), and refuses a request that
// names another object than it carries, or one that cannot exist.
func (d *Deletion) identify() error {
	meta := d.Meta
	if meta.Name == "" {
		return fmt.Errorf("cannot check %s for dependents: the deleted object has no metadata.name", d)
	}
	if (d.Name != "" && d.Name != meta.Name) || (d.Namespace != "" && d.Namespace != meta.Namespace) {
		return fmt.Errorf("cannot check %s for dependents: the request names %s but its object is %s",
			d, qualified(d.Namespace, d.Name), qualified(meta.Namespace, meta.Name))
	}
	d.Name, d.Namespace = meta.Name, meta.Namespace
	if err := Name(d.Name); err != nil {
		return fmt.Errorf("cannot check %s for dependents: %w", d, err)
	}
	if d.Namespace != "" {
		if err := Namespace(d.Namespace); err != nil {
			return fmt.Errorf("cannot check %s for dependents: %w", d, err)
		}
	}
	return nil
}

// String names the deleted object as denials do: resource/name.
func (d Deletion) String() string { return d.Resource.Resource + "/" + d.Name }

func qualified(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

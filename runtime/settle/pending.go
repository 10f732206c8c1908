package settle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// PendingReferences records the references that writes make to objects
// that do not exist (yet): such a write records no intent, since there is no
// object to record it on, and may be stored up to the request timeout after
// it was admitted. An object created meanwhile must not be settled before
// that write is stored, so the settler asks here first.
//
// A mark is a Lease in the dep-ctrl workspace, named after the referenced
// object, renewed at each such write: consumers cannot touch it there, and a
// GET of it is a consistent read.
type PendingReferences struct {
	Leases    coordinationclient.LeasesGetter
	Namespace string
	now       func() time.Time
}

// NewPendingReferences keeps marks in namespace of the dep-ctrl workspace
// that leases reaches.
func NewPendingReferences(leases coordinationclient.LeasesGetter, namespace string) *PendingReferences {
	return &PendingReferences{Leases: leases, Namespace: namespace, now: time.Now}
}

// pendingLeaseName names the mark of the object called name of resource gr
// in cluster, in whatever namespace: a rule does not say whether its
// dependency is namespaced, so one mark stands for both.
func pendingLeaseName(cluster string, gr schema.GroupResource, name string) string {
	sum := sha256.Sum256([]byte(cluster + "\x00" + gr.String() + "\x00" + name))
	return "depctrl-pending-" + hex.EncodeToString(sum[:])[:32]
}

// Mark records, before the write is admitted, that a write references the
// object called name of gr in cluster.
func (p *PendingReferences) Mark(ctx context.Context, cluster string, gr schema.GroupResource, name string) error {
	leases := p.Leases.Leases(p.Namespace)
	lease := pendingLeaseName(cluster, gr, name)
	now := metav1.NewMicroTime(p.now())
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"renewTime": now}})
	if err != nil {
		return err
	}
	_, err = leases.Patch(ctx, lease, types.MergePatchType, body, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: lease, Labels: map[string]string{v1alpha1.ManagedByLabel: "depctrl-webhook"},
				Annotations: map[string]string{v1alpha1.Group + "/references": cluster + "/" + gr.String() + "/" + name}},
			Spec: coordinationv1.LeaseSpec{RenewTime: &now},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			_, err = leases.Patch(ctx, lease, types.MergePatchType, body, metav1.PatchOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("marking the reference to %s %s as pending: %w", gr, name, err)
	}
	return nil
}

// PendingSince returns when a write last referenced the object while it did
// not exist, the zero time if none ever did.
func (p *PendingReferences) PendingSince(ctx context.Context, cluster string, gr schema.GroupResource, name string) (time.Time, error) {
	l, err := p.Leases.Leases(p.Namespace).Get(ctx, pendingLeaseName(cluster, gr, name), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return time.Time{}, nil
	case err != nil:
		return time.Time{}, fmt.Errorf("reading the pending references to %s %s: %w", gr, name, err)
	case l.Spec.RenewTime == nil:
		return time.Time{}, nil
	}
	return l.Spec.RenewTime.Time, nil
}

package settle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// PendingReferences records that writes reference objects that do not
// exist (yet): such a write records no intent, since there is no object to
// record it on, and may be stored up to the request timeout after it was
// admitted. No object of that type in that workspace is settled while a
// mark is fresh, so the settler asks here first.
//
// A mark is a Lease in the dep-ctrl workspace, one per workspace and type:
// consumers cannot touch it there, and a GET of it is a consistent read. A
// replica renews it at most every renewEvery: a write admitted within that
// time of a renewal is stored well before the mark, which counts for an
// intent's lifetime, has expired.
type PendingReferences struct {
	Leases    coordinationclient.LeasesGetter
	Namespace string
	now       func() time.Time

	mu sync.Mutex
	// renewed is when this replica's last renewal of each mark had been
	// stored.
	renewed map[string]time.Time
}

// renewEvery is how long a renewal serves later writes. With the request
// timeout (60 s) it stays within the 90 s an intent, and so a mark, lives.
const renewEvery = 20 * time.Second

// NewPendingReferences keeps marks in namespace of the dep-ctrl workspace
// that leases reaches.
func NewPendingReferences(leases coordinationclient.LeasesGetter, namespace string) *PendingReferences {
	return &PendingReferences{Leases: leases, Namespace: namespace, now: time.Now, renewed: map[string]time.Time{}}
}

// pendingLeaseName names the mark of the objects of resource gr in cluster.
func pendingLeaseName(cluster string, gr schema.GroupResource) string {
	sum := sha256.Sum256([]byte(cluster + "\x00" + gr.String()))
	return "depctrl-pending-" + hex.EncodeToString(sum[:])[:32]
}

// Mark makes sure a mark for the objects of gr in cluster was stored before
// lookedAt, when the write found the object it references missing, or is
// stored now. It reports whether it stored one now: the write must then
// look for the object again, since it may have been created after lookedAt
// and before the mark, which the settler would then not see.
func (p *PendingReferences) Mark(ctx context.Context, cluster string, gr schema.GroupResource, lookedAt time.Time) (bool, error) {
	lease := pendingLeaseName(cluster, gr)
	p.mu.Lock()
	last, ok := p.renewed[lease]
	p.mu.Unlock()
	if ok && last.Before(lookedAt) && lookedAt.Sub(last) < renewEvery {
		return false, nil
	}
	leases := p.Leases.Leases(p.Namespace)
	now := metav1.NewMicroTime(p.now())
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"renewTime": now}})
	if err != nil {
		return false, err
	}
	_, err = leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: lease, Labels: map[string]string{v1alpha1.ManagedByLabel: "depctrl-webhook"},
			Annotations: map[string]string{v1alpha1.Group + "/references": cluster + "/" + gr.String()}},
		Spec: coordinationv1.LeaseSpec{RenewTime: &now},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = leases.Patch(ctx, lease, types.MergePatchType, body, metav1.PatchOptions{})
	}
	if err != nil {
		return false, fmt.Errorf("marking the references to missing %s as pending: %w", gr, err)
	}
	p.mu.Lock()
	p.renewed[lease] = p.now()
	p.mu.Unlock()
	return true, nil
}

// PendingSince returns when a write last referenced a missing object of gr
// in cluster, the zero time if none ever did.
func (p *PendingReferences) PendingSince(ctx context.Context, cluster string, gr schema.GroupResource) (time.Time, error) {
	l, err := p.Leases.Leases(p.Namespace).Get(ctx, pendingLeaseName(cluster, gr), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return time.Time{}, nil
	case err != nil:
		return time.Time{}, fmt.Errorf("reading the pending references to %s: %w", gr, err)
	case l.Spec.RenewTime == nil:
		return time.Time{}, nil
	}
	return l.Spec.RenewTime.Time, nil
}

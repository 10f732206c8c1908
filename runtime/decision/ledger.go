package decision

// The ledger of deferred deletions: the authoritative record of each, kept
// where no consumer can write. The annotation on the object shows the
// deferral to its owners; only an entry here lets the Replayer carry it
// out, so a record written on the object by anyone else (where no guard
// entry stood, or before one did) deletes nothing.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// DeferralLedger keeps the webhook's own record of every deferred deletion.
type DeferralLedger interface {
	// Put records e; recording it again is no error.
	Put(ctx context.Context, e LedgerEntry) error
	// Holds reports whether e is recorded, as it is.
	Holds(ctx context.Context, e LedgerEntry) (bool, error)
	// Remove forgets e; one not recorded is no error.
	Remove(ctx context.Context, e LedgerEntry) error
	// List returns every entry.
	List(ctx context.Context) ([]LedgerEntry, error)
}

// LedgerEntry is one deferred deletion: the object and the record written
// on it (v1alpha1.DeletionDeferredAnnotation's value, which names its UID).
type LedgerEntry struct {
	Cluster   string                      `json:"cluster"`
	Resource  schema.GroupVersionResource `json:"resource"`
	Namespace string                      `json:"namespace,omitempty"`
	Name      string                      `json:"name"`
	Record    string                      `json:"record"`
}

// key names the entry: a digest of all of it, so that an entry is found
// only for that very object and record.
func (e LedgerEntry) key() string {
	sum := sha256.Sum256([]byte(e.Cluster + "\x00" + e.Resource.String() + "\x00" + e.Namespace + "\x00" + e.Name + "\x00" + e.Record))
	return "deferral-" + hex.EncodeToString(sum[:20])
}

// ledgerLabel marks the Leases that are ledger entries;
// ledgerAnnotation holds the entry.
const (
	ledgerLabel      = v1alpha1.Group + "/deferred-deletion"
	ledgerAnnotation = v1alpha1.Group + "/deferred-deletion"
)

// LeaseLedger keeps the ledger as Leases in a namespace of the dep-ctrl
// workspace, which only the runtime may write (the pending references'
// namespace): one Lease an entry, named by its digest, the entry in an
// annotation.
type LeaseLedger struct {
	Leases coordinationv1client.LeaseInterface
}

// Put implements DeferralLedger.
func (l LeaseLedger) Put(ctx context.Context, e LedgerEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encoding a deferred deletion's entry: %w", err)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Name:        e.key(),
		Labels:      map[string]string{ledgerLabel: "true"},
		Annotations: map[string]string{ledgerAnnotation: string(b)},
	}}
	if _, err := l.Leases.Create(ctx, lease, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("recording a deferred deletion in the dep-ctrl workspace: %w", err)
	}
	return nil
}

// Holds implements DeferralLedger.
func (l LeaseLedger) Holds(ctx context.Context, e LedgerEntry) (bool, error) {
	lease, err := l.Leases.Get(ctx, e.key(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading a deferred deletion's entry: %w", err)
	}
	got, ok := entryOf(lease)
	return ok && got == e, nil
}

// Remove implements DeferralLedger.
func (l LeaseLedger) Remove(ctx context.Context, e LedgerEntry) error {
	if err := l.Leases.Delete(ctx, e.key(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing a deferred deletion's entry: %w", err)
	}
	return nil
}

// List implements DeferralLedger.
func (l LeaseLedger) List(ctx context.Context) ([]LedgerEntry, error) {
	list, err := l.Leases.List(ctx, metav1.ListOptions{LabelSelector: ledgerLabel + "=true"})
	if err != nil {
		return nil, fmt.Errorf("listing the deferred deletions: %w", err)
	}
	var out []LedgerEntry
	for i := range list.Items {
		if e, ok := entryOf(&list.Items[i]); ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// entryOf reads the entry a Lease holds; ok is false for one that holds
// none, or one whose name is not its digest.
func entryOf(lease *coordinationv1.Lease) (LedgerEntry, bool) {
	var e LedgerEntry
	if err := json.Unmarshal([]byte(lease.Annotations[ledgerAnnotation]), &e); err != nil || e.key() != lease.Name {
		return LedgerEntry{}, false
	}
	return e, true
}

package decision

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// The webhook's Events: each says what became of a deletion of the object
// it regards (skipped protection, deferred, carried out or dropped).

// webhookController is the reporting controller of the webhook's Events.
const webhookController = "dependencies.opendefense.cloud/webhook"

// deletionEvent is the webhook's Event about a deletion of regarding,
// reported by instance.
func deletionEvent(regarding process.Regarding, typ, reason, note, instance string) process.Event {
	return process.Event{
		Regarding:  regarding,
		Type:       typ,
		Reason:     reason,
		Action:     "Delete",
		Note:       note,
		Controller: webhookController,
		Instance:   instance,
	}
}

// regardingDeleted names the object of the deletion d, whose UID is uid.
func regardingDeleted(d admission.Deletion, uid types.UID) process.Regarding {
	return process.Regarding{APIVersion: d.Kind.GroupVersion().String(), Kind: d.Kind.Kind, Namespace: d.Namespace, Name: d.Name, UID: string(uid)}
}

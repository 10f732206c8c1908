package v1alpha1

import (
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// How the controller marks the reference index configuration it writes, so
// that the webhook can tell whether the configuration a rule's indexEpoch
// names is still in place as the controller left it.
const (
	// IndexWebhookName is the name of the single webhook inside each
	// reference index configuration; kcp names it when a write fails
	// because of it.
	IndexWebhookName = "reference-index." + Group
	// WrittenGenerationAnnotation records the generation of a reference
	// index configuration as the controller last wrote it. The server
	// raises the generation on every change to the webhooks, so a
	// configuration whose generation differs was changed by someone else
	// since, even if it was changed back: writes may have skipped the
	// index meanwhile.
	WrittenGenerationAnnotation = Group + "/written-generation"
)

// IntactIndexEpoch is the UID of cfg when it is the controller's reference
// index configuration as the controller last wrote it, else "". Every write
// of a dependent must still reach the index: its webhook, failing closed,
// selecting every object and namespace, with no match conditions. Only the
// controller's own webhooks may be in it (the other one withdraws intents).
func IntactIndexEpoch(cfg *admissionregistrationv1.MutatingWebhookConfiguration) string {
	if cfg.DeletionTimestamp != nil ||
		cfg.Labels[ManagedByLabel] != WebhookConfigurationManager ||
		cfg.Annotations[WrittenGenerationAnnotation] != strconv.FormatInt(cfg.Generation, 10) {
		return ""
	}
	index := 0
	for _, h := range cfg.Webhooks {
		switch h.Name {
		case IndexWebhookName:
			index++
			if h.FailurePolicy == nil || *h.FailurePolicy != admissionregistrationv1.Fail ||
				len(h.MatchConditions) > 0 || !selectsAll(h.NamespaceSelector) || !selectsAll(h.ObjectSelector) {
				return ""
			}
		case IntentWithdrawWebhookName:
		default:
			return ""
		}
	}
	if index != 1 {
		return ""
	}
	return string(cfg.UID)
}

func selectsAll(s *metav1.LabelSelector) bool {
	return s == nil || (len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0)
}

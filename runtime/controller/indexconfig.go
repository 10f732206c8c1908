package controller

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// indexWebhookName: see v1alpha1.IndexWebhookName.
const indexWebhookName = v1alpha1.IndexWebhookName

// DesiredIndexConfiguration renders the reference index configuration for
// one workspace that holds rules: every CREATE and UPDATE of the rules'
// dependent types goes to the webhook, which labels the object with what it
// references, so that deciding a DELETE lists only labelled candidates, and
// records an intent on each object the write newly references (package
// v1alpha1, Intent). A second webhook withdraws those intents when the
// dependent is deleted.
func DesiredIndexConfiguration(s WebhookSettings, dependents []schema.GroupVersionResource) *admissionregistrationv1.MutatingWebhookConfiguration {
	// A write that skipped the index would leave a reference the next
	// DELETE does not look for: it fails closed, for every object and
	// namespace. A later mutating webhook may change a reference; the
	// labels must then be computed again from the final object.
	index := mutating(webhookEntry(s, indexWebhookName, s.MutateURL,
		resourceRules(dependents, admissionregistrationv1.Create, admissionregistrationv1.Update)), admissionregistrationv1.IfNeededReinvocationPolicy)
	// Withdrawing is a courtesy: an intent left behind delays the deletion
	// of what it names until it expires, and deletes of dependents must not
	// wait for the webhook. Only dependents whose last write recorded
	// intents are sent.
	withdraw := mutating(webhookEntry(s, v1alpha1.IntentWithdrawWebhookName, s.MutateURL,
		resourceRules(dependents, admissionregistrationv1.Delete)), admissionregistrationv1.NeverReinvocationPolicy)
	withdraw.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	withdraw.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: v1alpha1.IntentLabel, Operator: metav1.LabelSelectorOpExists,
	}}}
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   s.ConfigurationName,
			Labels: map[string]string{managedByLabel: v1alpha1.WebhookConfigurationManager},
		},
		Webhooks: []admissionregistrationv1.MutatingWebhook{index, withdraw},
	}
}

// mutating is the mutating webhook with v's fields. Both write intents onto
// referenced objects, but not for a dry run.
func mutating(v admissionregistrationv1.ValidatingWebhook, reinvocation admissionregistrationv1.ReinvocationPolicyType) admissionregistrationv1.MutatingWebhook {
	return admissionregistrationv1.MutatingWebhook{
		Name: v.Name, ClientConfig: v.ClientConfig, Rules: v.Rules,
		FailurePolicy: v.FailurePolicy, MatchPolicy: v.MatchPolicy,
		NamespaceSelector: v.NamespaceSelector, ObjectSelector: v.ObjectSelector,
		SideEffects:    ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun),
		TimeoutSeconds: v.TimeoutSeconds, AdmissionReviewVersions: v.AdmissionReviewVersions,
		MatchConditions: v.MatchConditions, ReinvocationPolicy: &reinvocation,
	}
}

// IndexConfigurationDrifted reports whether existing differs from desired
// in anything this controller owns. Desired sets every field the server
// would default, so a freshly written object never counts as drifted.
func IndexConfigurationDrifted(existing, desired *admissionregistrationv1.MutatingWebhookConfiguration) bool {
	return managedByDrifted(&existing.ObjectMeta, &desired.ObjectMeta) || !equality.Semantic.DeepEqual(existing.Webhooks, desired.Webhooks)
}

// ApplyOwnedIndexFields copies what this controller owns from desired onto
// existing, keeping server-set metadata such as resourceVersion.
func ApplyOwnedIndexFields(existing, desired *admissionregistrationv1.MutatingWebhookConfiguration) {
	applyOwnedLabels(&existing.ObjectMeta, &desired.ObjectMeta)
	existing.Webhooks = desired.Webhooks
}

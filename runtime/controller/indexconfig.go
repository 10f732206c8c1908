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
	url := s.MutateURL
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   s.ConfigurationName,
			Labels: map[string]string{managedByLabel: v1alpha1.WebhookConfigurationManager},
		},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         indexWebhookName,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: s.CABundle},
			Rules:        resourceRules(dependents, admissionregistrationv1.Create, admissionregistrationv1.Update),
			// A write that skipped the index would leave a reference the
			// next DELETE does not look for.
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchPolicy:   ptr.To(admissionregistrationv1.Equivalent),
			// It writes intents onto referenced objects, but not for a
			// dry run.
			SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun),
			// A later mutating webhook may change a reference; the labels
			// must then be computed again from the final object.
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy),
			TimeoutSeconds:          ptr.To(s.TimeoutSeconds),
			AdmissionReviewVersions: []string{"v1"},
			// Match everything: the index must not depend on labels the
			// consumer controls.
			NamespaceSelector: &metav1.LabelSelector{},
			ObjectSelector:    &metav1.LabelSelector{},
		}, {
			Name:         v1alpha1.IntentWithdrawWebhookName,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: s.CABundle},
			Rules:        resourceRules(dependents, admissionregistrationv1.Delete),
			// Withdrawing is a courtesy: an intent left behind delays the
			// deletion of what it names until it expires, and deletes of
			// dependents must not wait for the webhook.
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun),
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
			TimeoutSeconds:          ptr.To(s.TimeoutSeconds),
			AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector:       &metav1.LabelSelector{},
			// Only dependents whose last write recorded intents.
			ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: v1alpha1.IntentLabel, Operator: metav1.LabelSelectorOpExists,
			}}},
		}},
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

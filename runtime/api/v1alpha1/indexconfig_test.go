package v1alpha1

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestIntactIndexEpoch: only the configuration as the controller wrote it
// vouches for the labels of its rules' dependents.
func TestIntactIndexEpoch(t *testing.T) {
	written := func() *admissionregistrationv1.MutatingWebhookConfiguration {
		return &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{
				Name: WebhookConfigurationName, UID: "uid-1", Generation: 3,
				Labels:      map[string]string{ManagedByLabel: WebhookConfigurationManager},
				Annotations: map[string]string{WrittenGenerationAnnotation: "3"},
			},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name:              IndexWebhookName,
				FailurePolicy:     ptr.To(admissionregistrationv1.Fail),
				NamespaceSelector: &metav1.LabelSelector{},
				ObjectSelector:    &metav1.LabelSelector{},
			}, {
				Name:          IntentWithdrawWebhookName,
				FailurePolicy: ptr.To(admissionregistrationv1.Ignore),
			}},
		}
	}
	tests := []struct {
		name   string
		change func(*admissionregistrationv1.MutatingWebhookConfiguration)
		want   string
	}{
		{"as written", func(*admissionregistrationv1.MutatingWebhookConfiguration) {}, "uid-1"},
		{"edited since (generation moved on)", func(c *admissionregistrationv1.MutatingWebhookConfiguration) { c.Generation = 4 }, ""},
		{"not the controller's", func(c *admissionregistrationv1.MutatingWebhookConfiguration) { c.Labels = nil }, ""},
		{"being deleted", func(c *admissionregistrationv1.MutatingWebhookConfiguration) { c.DeletionTimestamp = &metav1.Time{} }, ""},
		{"failing open", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
		}, ""},
		{"an object selector that lets writes by", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"skip-index": "false"}}
		}, ""},
		{"a namespace selector", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpExists}}}
		}, ""},
		{"a match condition", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "x", Expression: "false"}}
		}, ""},
		{"a second index webhook", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks = append(c.Webhooks, c.Webhooks[0])
		}, ""},
		{"without the withdraw webhook (an older controller's)", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks = c.Webhooks[:1]
		}, "uid-1"},
		{"someone else's webhook added", func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks = append(c.Webhooks, admissionregistrationv1.MutatingWebhook{Name: "other.example.io"})
		}, ""},
		{"another webhook's name", func(c *admissionregistrationv1.MutatingWebhookConfiguration) { c.Webhooks[0].Name = "other.example.io" }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := written()
			tt.change(c)
			if got := IntactIndexEpoch(c); got != tt.want {
				t.Fatalf("epoch = %q, want %q", got, tt.want)
			}
		})
	}
}

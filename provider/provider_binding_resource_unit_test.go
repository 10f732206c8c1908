package provider

import (
	"context"
	"reflect"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

func TestRemoveLeftoverConfigurations(t *testing.T) {
	config := func(kind, name string, labels map[string]interface{}) runtime.Object {
		meta := map[string]interface{}{"name": name}
		if labels != nil {
			meta["labels"] = labels
		}
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": meta,
		}}
	}
	controllers := map[string]interface{}{v1alpha1.ManagedByLabel: v1alpha1.WebhookConfigurationManager}
	tests := []struct {
		name        string
		objects     []runtime.Object
		wantRemoved []string
		// wantLeft are the names of the configurations of each kind that
		// must still be there.
		wantLeft map[string][]string
	}{
		{name: "nothing left", wantLeft: map[string][]string{}},
		{
			name: "both kinds left by the controller",
			objects: []runtime.Object{
				config("ValidatingWebhookConfiguration", v1alpha1.WebhookConfigurationName, controllers),
				config("MutatingWebhookConfiguration", v1alpha1.WebhookConfigurationName, controllers),
				config("ValidatingWebhookConfiguration", "someone-elses", controllers),
			},
			wantRemoved: []string{"validatingwebhookconfigurations dependency-controller", "mutatingwebhookconfigurations dependency-controller"},
			wantLeft:    map[string][]string{"validatingwebhookconfigurations": {"someone-elses"}},
		},
		{
			name: "a user's object of the same name",
			objects: []runtime.Object{
				config("ValidatingWebhookConfiguration", v1alpha1.WebhookConfigurationName, map[string]interface{}{v1alpha1.ManagedByLabel: "helm"}),
				config("MutatingWebhookConfiguration", v1alpha1.WebhookConfigurationName, nil),
			},
			wantLeft: map[string][]string{
				"validatingwebhookconfigurations": {v1alpha1.WebhookConfigurationName},
				"mutatingwebhookconfigurations":   {v1alpha1.WebhookConfigurationName},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), tt.objects...)
			removed, err := removeLeftoverConfigurations(context.Background(), client)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(removed, tt.wantRemoved) {
				t.Errorf("removed %q, want %q", removed, tt.wantRemoved)
			}
			for _, gvr := range webhookConfigurationGVRs {
				for _, name := range tt.wantLeft[gvr.Resource] {
					if _, err := client.Resource(gvr).Get(context.Background(), name, metav1.GetOptions{}); err != nil {
						t.Errorf("%s %s: %v, want it left alone", gvr.Resource, name, err)
					}
				}
				if !slices.Contains(tt.wantLeft[gvr.Resource], v1alpha1.WebhookConfigurationName) {
					if _, err := client.Resource(gvr).Get(context.Background(), v1alpha1.WebhookConfigurationName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
						t.Errorf("%s %s still there (%v)", gvr.Resource, v1alpha1.WebhookConfigurationName, err)
					}
				}
			}
		})
	}
}

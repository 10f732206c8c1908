package process

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestEventObject(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	tests := []struct {
		name          string
		event         Event
		wantNamespace string
		wantRegarding map[string]string
	}{{
		name: "namespaced object",
		event: Event{
			Regarding: Regarding{APIVersion: "network.example.io/v1", Kind: "VPC", Namespace: "apps", Name: "vpc-1", UID: "u-1"},
			Type:      EventWarning, Reason: "DeletionProtectionSkipped", Action: "Delete", Note: "deleted", Controller: "c", Instance: "i",
		},
		wantNamespace: "apps",
		wantRegarding: map[string]string{"apiVersion": "network.example.io/v1", "kind": "VPC", "name": "vpc-1", "namespace": "apps", "uid": "u-1"},
	}, {
		name: "cluster-scoped object goes to default",
		event: Event{
			Regarding: Regarding{APIVersion: "dependencies.opendefense.cloud/v1alpha1", Kind: "DependencyRule", Name: "r", UID: "u-2"},
			Type:      EventNormal, Reason: "Ready", Action: "Reconcile", Note: strings.Repeat("x", 2000), Controller: "c", Instance: "i",
		},
		wantNamespace: "default",
		wantRegarding: map[string]string{"apiVersion": "dependencies.opendefense.cloud/v1alpha1", "kind": "DependencyRule", "name": "r", "uid": "u-2"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := tt.event.Object(now)
			for _, f := range []string{"reason", "type", "action", "reportingController", "reportingInstance", "eventTime", "note"} {
				if v, _, _ := unstructured.NestedString(ev.Object, f); v == "" {
					t.Errorf("the Event has no %s", f)
				}
			}
			if note, _, _ := unstructured.NestedString(ev.Object, "note"); len(note) > maxEventNote {
				t.Errorf("note of %d bytes, the API server takes at most %d", len(note), maxEventNote)
			}
			regarding, _, _ := unstructured.NestedStringMap(ev.Object, "regarding")
			if !reflect.DeepEqual(regarding, tt.wantRegarding) {
				t.Errorf("regarding = %v, want %v", regarding, tt.wantRegarding)
			}
			if ev.GetNamespace() != tt.wantNamespace {
				t.Errorf("namespace %q, want %q", ev.GetNamespace(), tt.wantNamespace)
			}
			if errs := validation.IsDNS1123Subdomain(ev.GetName()); len(errs) > 0 || !strings.HasPrefix(ev.GetName(), tt.event.Regarding.Name+".") {
				t.Errorf("Event name %q: %v", ev.GetName(), errs)
			}
		})
	}
}

func TestEventNameOfLongObject(t *testing.T) {
	long := EventName(strings.Repeat("a", 253), time.Now())
	if errs := validation.IsDNS1123Subdomain(long); len(errs) > 0 {
		t.Errorf("Event name for a long object name %q: %v", long, errs)
	}
}

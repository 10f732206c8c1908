package controller

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

func cond(t, status, reason string) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: reason, Message: reason + " message"}
}

func TestRuleEvents(t *testing.T) {
	const (
		resolved  = v1alpha1.ConditionWorkspacesResolved
		installed = v1alpha1.ConditionWebhookInstalled
		acyclic   = v1alpha1.ConditionAcyclic
		indexed   = v1alpha1.ConditionIndexed
		ready     = v1alpha1.ConditionReady
	)
	tests := []struct {
		name          string
		before, after []metav1.Condition
		want          []string
	}{{
		name:  "new rule whose workspace is missing",
		after: []metav1.Condition{cond(resolved, "False", "WorkspaceNotFound"), cond(installed, "False", "WorkspacesNotResolved"), cond(acyclic, "True", "NoCycle"), cond(ready, "False", "WorkspaceNotFound")},
		want:  []string{"Warning WorkspaceNotFound"},
	}, {
		name:   "the same problem again: nothing new",
		before: []metav1.Condition{cond(resolved, "False", "WorkspaceNotFound")},
		after:  []metav1.Condition{cond(resolved, "False", "WorkspaceNotFound")},
	}, {
		name:   "installed, then ready",
		before: []metav1.Condition{cond(resolved, "True", "Resolved"), cond(installed, "False", "Propagating"), cond(ready, "False", "Propagating")},
		after:  []metav1.Condition{cond(resolved, "True", "Resolved"), cond(installed, "True", "Installed"), cond(ready, "True", "Ready")},
		want:   []string{"Normal Installed", "Normal Ready"},
	}, {
		name:  "steps on the way are not reported",
		after: []metav1.Condition{cond(resolved, "True", "Resolved"), cond(installed, "False", "Propagating"), cond(ready, "False", "Pending")},
	}, {
		name:   "claim not accepted, then a cycle",
		before: []metav1.Condition{cond(installed, "False", "ExportNotBound"), cond(acyclic, "True", "NoCycle")},
		after:  []metav1.Condition{cond(installed, "False", "ClaimNotAccepted"), cond(acyclic, "False", "CycleDetected")},
		want:   []string{"Warning ClaimNotAccepted", "Warning CycleDetected"},
	}, {
		name:   "a type not served is a Warning",
		before: []metav1.Condition{cond(v1alpha1.ConditionTypesServed, "Unknown", "ClaimNotAccepted")},
		after:  []metav1.Condition{cond(v1alpha1.ConditionTypesServed, "False", "VersionNotServed"), cond(ready, "False", "VersionNotServed")},
		want:   []string{"Warning VersionNotServed"},
	}, {
		name:  "types not known yet: no Event",
		after: []metav1.Condition{cond(v1alpha1.ConditionTypesServed, "Unknown", "ClaimNotAccepted"), cond(ready, "False", "ClaimNotAccepted")},
	}, {
		name:   "cycle broken",
		before: []metav1.Condition{cond(acyclic, "False", "CycleDetected")},
		after:  []metav1.Condition{cond(acyclic, "True", "NoCycle")},
		want:   []string{"Normal CycleResolved"},
	}, {
		name:  "a rule that starts without a cycle says nothing about cycles",
		after: []metav1.Condition{cond(acyclic, "True", "NoCycle")},
	}, {
		name:  "a new rule indexed at once: no news beside Installed",
		after: []metav1.Condition{cond(installed, "True", "Installed"), cond(indexed, "True", "Indexed")},
		want:  []string{"Normal Installed"},
	}, {
		name:   "index claim not accepted, while the rule is ready",
		before: []metav1.Condition{cond(indexed, "True", "Indexed"), cond(ready, "True", "Ready")},
		after:  []metav1.Condition{cond(indexed, "False", "ClaimNotAccepted"), cond(ready, "True", "Ready")},
		want:   []string{"Warning ClaimNotAccepted"},
	}, {
		name:   "index install failed",
		before: []metav1.Condition{cond(indexed, "True", "Indexed")},
		after:  []metav1.Condition{cond(indexed, "False", "InstallFailed")},
		want:   []string{"Warning InstallFailed"},
	}, {
		name:   "index back",
		before: []metav1.Condition{cond(indexed, "False", "ClaimNotAccepted")},
		after:  []metav1.Condition{cond(indexed, "True", "Indexed")},
		want:   []string{"Normal Indexed"},
	}, {
		name:  "an invalid spec is reported once per condition that owns it, not again for the index",
		after: []metav1.Condition{cond(resolved, "False", "InvalidSpec"), cond(installed, "False", "InvalidSpec"), cond(indexed, "False", "InvalidSpec")},
		want:  []string{"Warning InvalidSpec", "Warning InvalidSpec"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range ruleEvents(tt.before, tt.after) {
				got = append(got, e.Type+" "+e.Reason)
				if e.Note == "" {
					t.Errorf("%s %s has no note", e.Type, e.Reason)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("events %q, want %q", got, tt.want)
			}
		})
	}
}

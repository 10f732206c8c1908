package controller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// transient reasons are steps on the way to Ready, or echoes of a problem
// another condition already reports: no Event for them.
var transient = map[string]bool{
	"Pending":               true,
	"Propagating":           true,
	"NotYetEnforced":        true,
	"WorkspacesNotResolved": true,
}

// ruleEvent is one Event to record on a rule.
type ruleEvent struct {
	Type, Reason, Note string
}

// ruleEvents returns the Events a status change warrants: a Warning each
// time a condition the controller owns turns False for a reason someone
// must act on (a workspace not found, a type the exports do not serve, the
// export not bound or its claim not accepted, a cycle, an install that
// failed, the reference index missing),
// and a Normal one when the webhook gets installed, a cycle is broken, the
// index comes back, and the rule becomes Ready. Only transitions count, so
// a problem that persists is reported once, not on every run, and a
// restarted controller repeats nothing.
func ruleEvents(before, after []metav1.Condition) []ruleEvent {
	var out []ruleEvent
	for _, t := range []string{v1alpha1.ConditionWorkspacesResolved, v1alpha1.ConditionTypesServed, v1alpha1.ConditionWebhookInstalled, v1alpha1.ConditionAcyclic, v1alpha1.ConditionIndexed, v1alpha1.ConditionReady} {
		a := meta.FindStatusCondition(after, t)
		if a == nil {
			continue
		}
		b := meta.FindStatusCondition(before, t)
		if b != nil && b.Status == a.Status && b.Reason == a.Reason {
			continue
		}
		switch {
		case t == v1alpha1.ConditionIndexed && a.Reason == "InvalidSpec":
			// WorkspacesResolved and WebhookInstalled report it already.
		case a.Status == metav1.ConditionFalse && t != v1alpha1.ConditionReady && !transient[a.Reason]:
			out = append(out, ruleEvent{Type: process.EventWarning, Reason: a.Reason, Note: a.Message})
		case a.Status == metav1.ConditionTrue && t == v1alpha1.ConditionWebhookInstalled:
			out = append(out, ruleEvent{Type: process.EventNormal, Reason: a.Reason, Note: a.Message})
		case a.Status == metav1.ConditionTrue && t == v1alpha1.ConditionAcyclic && b != nil && b.Status == metav1.ConditionFalse:
			out = append(out, ruleEvent{Type: process.EventNormal, Reason: "CycleResolved", Note: "the rule is no longer part of a dependency cycle"})
		case a.Status == metav1.ConditionTrue && t == v1alpha1.ConditionIndexed && b != nil && b.Status == metav1.ConditionFalse:
			// Only a recovery: a new rule's first index is no news beside
			// Installed and Ready.
			out = append(out, ruleEvent{Type: process.EventNormal, Reason: a.Reason, Note: a.Message})
		case a.Status == metav1.ConditionTrue && t == v1alpha1.ConditionReady:
			out = append(out, ruleEvent{Type: process.EventNormal, Reason: a.Reason, Note: a.Message})
		}
	}
	return out
}

// instance names this replica in the Events it records.
var instance = process.EventInstance("depctrl-controller")

// recordEvents writes evs next to the rule, in its own workspace, through
// the virtual workspace and the export's claim on Events. Events are a
// courtesy on top of the status conditions: a workspace that did not
// accept the claim gets none, and a failure is logged, never retried.
func (s *Syncer) recordEvents(ctx context.Context, o process.ShardObject, rule *v1alpha1.DependencyRule, evs []ruleEvent, claimAccepted bool) {
	if len(evs) == 0 {
		return
	}
	log := s.Log.WithValues("cluster", o.Cluster, "rule", rule.Name)
	if !claimAccepted {
		log.V(1).Info("not recording Events: the workspace did not accept the claim on events", "events", len(evs))
		return
	}
	c, err := s.VW.Client(o.URL, o.Cluster)
	if err != nil {
		log.Error(err, "recording Events")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	now := time.Now()
	for i, e := range evs {
		obj := process.Event{
			Regarding: process.Regarding{
				APIVersion: v1alpha1.GroupVersion.String(),
				Kind:       v1alpha1.Kind,
				Name:       rule.Name,
				UID:        string(rule.UID),
			},
			Type:       e.Type,
			Reason:     e.Reason,
			Action:     "Reconcile",
			Note:       e.Note,
			Controller: "dependencies.opendefense.cloud/controller",
			Instance:   instance,
		}.Object(now.Add(time.Duration(i))) // distinct names within one run
		if _, err := c.Resource(process.EventsGVR).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			log.Error(err, "recording an Event", "reason", e.Reason)
		}
	}
}

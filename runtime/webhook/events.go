package webhook

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/events"
)

// Reason of the Event recorded when the skip-protection annotation let an
// object go.
const reasonSkipProtection = "DeletionProtectionSkipped"

// SkipAuditor records a deletion that the skip-protection annotation let
// through. It must not block or fail the admission decision.
type SkipAuditor interface {
	RecordSkip(cluster string, req *admissionv1.AdmissionRequest, meta metav1.ObjectMeta)
}

// EventAuditor records each use of the skip-protection annotation as an
// Event on the deleted object, in its own workspace, where its owners look.
type EventAuditor struct {
	Finder   *FrontProxyFinder
	Log      logr.Logger
	instance string
}

// NewEventAuditor returns an auditor writing through finder's front-proxy
// connection.
func NewEventAuditor(finder *FrontProxyFinder, log logr.Logger) *EventAuditor {
	return &EventAuditor{Finder: finder, Log: log, instance: events.Instance("depctrl-webhook")}
}

// RecordSkip writes the Event in the background; a failure is logged.
func (a *EventAuditor) RecordSkip(cluster string, req *admissionv1.AdmissionRequest, meta metav1.ObjectMeta) {
	ev := skipEvent(req, meta, a.instance, time.Now())
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := a.Finder.client(cluster)
		if err == nil {
			_, err = c.Resource(events.GVR).Namespace(ev.GetNamespace()).Create(ctx, ev, metav1.CreateOptions{})
		}
		if err != nil {
			a.Log.Error(err, "recording the skip-protection Event", "cluster", cluster, "namespace", ev.GetNamespace(), "name", req.Name)
		}
	}()
}

// skipEvent is the Event for one skip-protection use.
func skipEvent(req *admissionv1.AdmissionRequest, meta metav1.ObjectMeta, instance string, now time.Time) *unstructured.Unstructured {
	return events.Event{
		Regarding: events.Regarding{
			APIVersion: schema.GroupVersion{Group: req.Kind.Group, Version: req.Kind.Version}.String(),
			Kind:       req.Kind.Kind,
			Namespace:  req.Namespace,
			Name:       req.Name,
			UID:        string(meta.UID),
		},
		Type:   events.Warning,
		Reason: reasonSkipProtection,
		Action: "Delete",
		Note: fmt.Sprintf("%s deleted with %s=true by %s (groups: %s): dependency protection was not applied",
			describe(req), v1alpha1.SkipProtectionAnnotation, req.UserInfo.Username, strings.Join(req.UserInfo.Groups, ", ")),
		Controller: "dependencies.opendefense.cloud/webhook",
		Instance:   instance,
	}.Object(now)
}

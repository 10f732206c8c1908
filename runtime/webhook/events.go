package webhook

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

var eventsGVR = schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}

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
	host, _ := os.Hostname()
	if host == "" {
		host = "depctrl-webhook"
	}
	return &EventAuditor{Finder: finder, Log: log, instance: host}
}

// RecordSkip writes the Event in the background; a failure is logged.
func (a *EventAuditor) RecordSkip(cluster string, req *admissionv1.AdmissionRequest, meta metav1.ObjectMeta) {
	ev := skipEvent(req, meta, a.instance, time.Now())
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := a.Finder.client(cluster)
		if err == nil {
			_, err = c.Resource(eventsGVR).Namespace(ev.GetNamespace()).Create(ctx, ev, metav1.CreateOptions{})
		}
		if err != nil {
			a.Log.Error(err, "recording the skip-protection Event", "cluster", cluster, "namespace", ev.GetNamespace(), "name", req.Name)
		}
	}()
}

// eventName is <object>.<hex time>, as Kubernetes' own recorders name
// Events, shortened so that it stays a valid name.
func eventName(object string, now time.Time) string {
	if len(object) > 200 {
		object = object[:200]
	}
	return fmt.Sprintf("%s.%x", strings.TrimRight(object, ".-"), now.UnixNano())
}

// skipEvent is the Event for one skip-protection use. Cluster-scoped
// objects get theirs in the default namespace.
func skipEvent(req *admissionv1.AdmissionRequest, meta metav1.ObjectMeta, instance string, now time.Time) *unstructured.Unstructured {
	ns := req.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	note := fmt.Sprintf("%s deleted with %s=true by %s (groups: %s): dependency protection was not applied",
		describe(req), v1alpha1.SkipProtectionAnnotation, req.UserInfo.Username, strings.Join(req.UserInfo.Groups, ", "))
	if len(note) > 1024 {
		note = note[:1021] + "..."
	}
	regarding := map[string]interface{}{
		"apiVersion": schema.GroupVersion{Group: req.Kind.Group, Version: req.Kind.Version}.String(),
		"kind":       req.Kind.Kind,
		"name":       req.Name,
		"uid":        string(meta.UID),
	}
	if req.Namespace != "" {
		regarding["namespace"] = req.Namespace
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "events.k8s.io/v1",
		"kind":       "Event",
		"metadata": map[string]interface{}{
			"name":      eventName(req.Name, now),
			"namespace": ns,
		},
		"eventTime":           now.UTC().Format("2006-01-02T15:04:05.000000Z07:00"),
		"reportingController": "dependencies.opendefense.cloud/webhook",
		"reportingInstance":   instance,
		"action":              "Delete",
		"reason":              reasonSkipProtection,
		"type":                "Warning",
		"note":                note,
		"regarding":           regarding,
	}}
}

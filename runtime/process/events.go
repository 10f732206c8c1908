package process

// The events.k8s.io/v1 Events the runtime records: the webhook's audit of
// skip-protection deletes, and the controller's reports on DependencyRules.
// Both write them next to the object they are about, where its owners look
// (kubectl describe, kubectl events).

import (
	"fmt"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// EventsGVR is the resource Events are created as.
var EventsGVR = schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}

// EventsClaim is how an APIExport claims Events: kcp keys claims on
// Events by the core group, whichever of the two Event APIs a request uses.
var EventsClaim = schema.GroupResource{Resource: "events"}

// Event types.
const (
	EventNormal  = "Normal"
	EventWarning = "Warning"
)

// maxEventNote is the API server's limit on an Event's note.
const maxEventNote = 1024

// Regarding names the object an Event is about.
type Regarding struct {
	APIVersion, Kind, Namespace, Name string
	UID                               string
}

// Event is one report.
type Event struct {
	Regarding Regarding
	// Type is EventNormal or EventWarning.
	Type, Reason, Action, Note string
	// Controller and Instance say who reports: the component and the pod.
	Controller, Instance string
}

// Object renders e as an Event object created at now. Events about
// cluster-scoped objects go to the default namespace, as Kubernetes' own
// recorders put them.
func (e Event) Object(now time.Time) *unstructured.Unstructured {
	ns := e.Regarding.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	note := e.Note
	if len(note) > maxEventNote {
		note = note[:maxEventNote-3] + "..."
	}
	regarding := map[string]interface{}{
		"apiVersion": e.Regarding.APIVersion,
		"kind":       e.Regarding.Kind,
		"name":       e.Regarding.Name,
	}
	if e.Regarding.UID != "" {
		regarding["uid"] = e.Regarding.UID
	}
	if e.Regarding.Namespace != "" {
		regarding["namespace"] = e.Regarding.Namespace
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "events.k8s.io/v1",
		"kind":       "Event",
		"metadata": map[string]interface{}{
			"name":      EventName(e.Regarding.Name, now),
			"namespace": ns,
		},
		"eventTime":           now.UTC().Format("2006-01-02T15:04:05.000000Z07:00"),
		"reportingController": e.Controller,
		"reportingInstance":   e.Instance,
		"action":              e.Action,
		"reason":              e.Reason,
		"type":                e.Type,
		"note":                note,
		"regarding":           regarding,
	}}
}

// EventInstance names the reporting replica in Events: the host name (the pod's
// name in a Deployment), or fallback when there is none.
func EventInstance(fallback string) string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return fallback
}

// EventName is <object>.<hex time>, as Kubernetes' own recorders name Events,
// shortened so that it stays a valid name.
func EventName(object string, now time.Time) string {
	if len(object) > 200 {
		object = object[:200]
	}
	return fmt.Sprintf("%s.%x", strings.TrimRight(object, ".-"), now.UnixNano())
}

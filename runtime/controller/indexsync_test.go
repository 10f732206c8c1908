package controller

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// fakeServer is a dynamic client for index configurations that sets UIDs
// and generations as the API server does: a new object starts at
// generation 1, and only a change to the webhooks raises it.
type fakeServer struct {
	client *fake.FakeDynamicClient
	uids   int
	writes []string
}

func newFakeServer() *fakeServer {
	gvr := process.MutatingWebhookConfigurationsGVR
	f := &fakeServer{client: fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "MutatingWebhookConfigurationList"})}
	f.client.PrependReactor("*", gvr.Resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch a.GetVerb() {
		case "create":
			u := a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured)
			f.uids++
			u.SetUID(types.UID(fmt.Sprintf("uid-%d", f.uids)))
			u.SetGeneration(1)
			f.writes = append(f.writes, "create")
		case "update":
			u := a.(k8stesting.UpdateAction).GetObject().(*unstructured.Unstructured)
			old, err := f.client.Tracker().Get(gvr, "", u.GetName())
			if err != nil {
				return true, nil, err
			}
			o := old.(*unstructured.Unstructured)
			u.SetUID(o.GetUID())
			u.SetGeneration(o.GetGeneration())
			if !reflect.DeepEqual(o.Object["webhooks"], u.Object["webhooks"]) {
				u.SetGeneration(o.GetGeneration() + 1)
			}
			f.writes = append(f.writes, "update")
		case "delete":
			f.writes = append(f.writes, "delete")
		}
		return false, nil, nil // the tracker stores it
	})
	return f
}

func (f *fakeServer) res() dynamic.ResourceInterface {
	return f.client.Resource(process.MutatingWebhookConfigurationsGVR)
}

func (f *fakeServer) get(t *testing.T) *admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	u, err := f.res().Get(context.Background(), testSettings.ConfigurationName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, c); err != nil {
		t.Fatal(err)
	}
	return c
}

// edit changes the configuration as someone else would.
func (f *fakeServer) edit(t *testing.T, change func(*admissionregistrationv1.MutatingWebhookConfiguration)) {
	t.Helper()
	c := f.get(t)
	change(c)
	u, err := toUnstructured(c, "MutatingWebhookConfiguration")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.res().Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestEnsureIndexConfiguration(t *testing.T) {
	vms := []schema.GroupVersionResource{testVMs}
	both := []schema.GroupVersionResource{testVMs, testDBs}
	tests := []struct {
		name string
		// before runs against a server holding the configuration for vms
		// as the controller wrote it.
		before  func(t *testing.T, f *fakeServer)
		desired []schema.GroupVersionResource
		// ca, when set, replaces the CA bundle of the second run.
		ca     string
		writes []string
		// newEpoch: the UID changed, so no label written before counts.
		newEpoch bool
	}{{
		name:    "unchanged: nothing written",
		desired: vms,
	}, {
		name:    "a dependent type added by a new rule: updated in place, same epoch",
		desired: both,
		writes:  []string{"update"},
	}, {
		name:    "the CA rotated: updated in place, same epoch",
		desired: vms,
		ca:      "new CA",
		writes:  []string{"update"},
	}, {
		name: "a label removed by hand: repaired in place, same epoch",
		before: func(t *testing.T, f *fakeServer) {
			f.edit(t, func(c *admissionregistrationv1.MutatingWebhookConfiguration) { delete(c.Labels, managedByLabel) })
		},
		desired: vms,
		writes:  []string{"update"},
	}, {
		name: "a type removed by hand: recreated, new epoch",
		before: func(t *testing.T, f *fakeServer) {
			f.edit(t, func(c *admissionregistrationv1.MutatingWebhookConfiguration) { c.Webhooks[0].Rules = nil })
		},
		desired:  vms,
		writes:   []string{"delete", "create"},
		newEpoch: true,
	}, {
		name: "failure policy relaxed and set back by hand: recreated, new epoch",
		before: func(t *testing.T, f *fakeServer) {
			f.edit(t, func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
				c.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
			})
			f.edit(t, func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
				c.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Fail)
			})
		},
		desired:  vms,
		writes:   []string{"delete", "create"},
		newEpoch: true,
	}, {
		name: "written by someone else: recreated, new epoch",
		before: func(t *testing.T, f *fakeServer) {
			f.edit(t, func(c *admissionregistrationv1.MutatingWebhookConfiguration) { c.Annotations = nil })
		},
		desired:  vms,
		writes:   []string{"delete", "create"},
		newEpoch: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s := &Syncer{Log: logr.Discard()}
			f := newFakeServer()
			// ensure runs as a run does, on the configuration as listed.
			ensure := func(desired *admissionregistrationv1.MutatingWebhookConfiguration) (string, error) {
				current, err := readConfiguration(ctx, f.res(), desired.Name)
				if err != nil {
					return "", err
				}
				return s.ensureIndexConfiguration(ctx, f.res(), "comp", current, desired)
			}
			first, err := ensure(DesiredIndexConfiguration(testSettings, vms))
			if err != nil || first == "" || !reflect.DeepEqual(f.writes, []string{"create"}) {
				t.Fatalf("first install: uid %q, err %v, writes %v", first, err, f.writes)
			}
			if ChangedByOthers(f.get(t)) {
				t.Fatalf("just created, yet changed by others: %v", f.get(t).ObjectMeta)
			}
			if tt.before != nil {
				tt.before(t, f)
			}
			f.writes = nil
			settings := testSettings
			if tt.ca != "" {
				settings.CABundle = []byte(tt.ca)
			}
			got, err := ensure(DesiredIndexConfiguration(settings, tt.desired))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(f.writes, tt.writes) {
				t.Errorf("writes %v, want %v", f.writes, tt.writes)
			}
			if (got != first) != tt.newEpoch {
				t.Errorf("uid %q after %q: new epoch %v, want %v", got, first, got != first, tt.newEpoch)
			}
			c := f.get(t)
			if string(c.UID) != got {
				t.Errorf("returned uid %q, the configuration has %q", got, c.UID)
			}
			if ChangedByOthers(c) || IndexConfigurationDrifted(c, DesiredIndexConfiguration(settings, tt.desired)) {
				t.Errorf("not as desired afterwards: generation %d, annotations %v", c.Generation, c.Annotations)
			}
			// The next run finds nothing to do.
			f.writes = nil
			if again, err := ensure(DesiredIndexConfiguration(settings, tt.desired)); err != nil || again != got || f.writes != nil {
				t.Errorf("second run: uid %q, err %v, writes %v", again, err, f.writes)
			}
		})
	}
}

// TestConfirmWrittenGeneration: when the server's generation is not the
// one expected, the annotation follows the server, in a write that keeps
// the generation.
func TestConfirmWrittenGeneration(t *testing.T) {
	ctx := context.Background()
	f := newFakeServer()
	u, err := toUnstructured(DesiredIndexConfiguration(testSettings, []schema.GroupVersionResource{testVMs}), "MutatingWebhookConfiguration")
	if err != nil {
		t.Fatal(err)
	}
	created, err := f.res().Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := confirmWrittenGeneration(ctx, f.res(), created, 7); err != nil {
		t.Fatal(err)
	}
	c := f.get(t)
	if c.Generation != 1 || c.Annotations[writtenGenerationAnnotation] != strconv.Itoa(1) || ChangedByOthers(c) {
		t.Fatalf("generation %d, annotations %v", c.Generation, c.Annotations)
	}
}

func TestSettleIndex(t *testing.T) {
	done := indexSync{
		UIDs:   map[string]string{"comp": "uid-1"},
		Failed: map[string]error{"broken": fmt.Errorf("forbidden")},
	}
	indexed := Outcome{OK: true, Reason: "Indexed", Message: "covers writes"}
	tests := []struct {
		name       string
		rp         RulePlan
		wantReason string
		wantEpoch  string
	}{
		{"installed: the configuration's UID is the epoch", RulePlan{Indexed: indexed, IndexTarget: "comp"}, "Indexed", "uid-1"},
		{"install failed: no epoch", RulePlan{Indexed: indexed, IndexTarget: "broken"}, "InstallFailed", ""},
		{"claim not accepted: no epoch", RulePlan{Indexed: Outcome{Reason: "ClaimNotAccepted"}}, "ClaimNotAccepted", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rp := tt.rp
			settleIndex(&rp, done)
			if rp.Indexed.Reason != tt.wantReason || rp.IndexEpoch != tt.wantEpoch {
				t.Fatalf("reason %s, epoch %q; want %s, %q", rp.Indexed.Reason, rp.IndexEpoch, tt.wantReason, tt.wantEpoch)
			}
			if tt.wantReason == "InstallFailed" && (rp.Indexed.OK || !strings.Contains(rp.Indexed.Message, "forbidden")) {
				t.Fatalf("outcome %+v", rp.Indexed)
			}
		})
	}
}

// TestWriteListed: a configuration written from what the run listed is
// written once more, from a fresh read, when it changed (conflict) or was
// created (already exists) since the list; any other error is returned as
// it is, and a write that succeeds is not repeated.
func TestWriteListed(t *testing.T) {
	gvr := process.MutatingWebhookConfigurationsGVR
	gr := gvr.GroupResource()
	fresh := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
		"metadata": map[string]interface{}{"name": "cfg", "resourceVersion": "2"}}}
	listed := fresh.DeepCopy()
	listed.SetResourceVersion("1")
	for _, tt := range []struct {
		name      string
		listed    *unstructured.Unstructured
		first     error
		wantCalls []string // the resourceVersion each write saw ("" for none)
		wantErr   bool
	}{
		{name: "written as listed", listed: listed, wantCalls: []string{"1"}},
		{name: "changed since the list", listed: listed, first: apierrors.NewConflict(gr, "cfg", fmt.Errorf("stale")), wantCalls: []string{"1", "2"}},
		{name: "created since the list", first: apierrors.NewAlreadyExists(gr, "cfg"), wantCalls: []string{"", "2"}},
		{name: "another error", listed: listed, first: fmt.Errorf("boom"), wantCalls: []string{"1"}, wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "MutatingWebhookConfigurationList"}, fresh.DeepCopy()).Resource(gvr)
			var calls []string
			got, err := writeListed(context.Background(), res, "cfg", tt.listed, func(current *unstructured.Unstructured) (int, error) {
				rv := ""
				if current != nil {
					rv = current.GetResourceVersion()
				}
				calls = append(calls, rv)
				if len(calls) == 1 && tt.first != nil {
					return 0, tt.first
				}
				return len(calls), nil
			})
			if !reflect.DeepEqual(calls, tt.wantCalls) {
				t.Errorf("writes saw %q, want %q", calls, tt.wantCalls)
			}
			if (err != nil) != tt.wantErr {
				t.Errorf("error %v, want error %v", err, tt.wantErr)
			}
			if err == nil && got != len(tt.wantCalls) {
				t.Errorf("result %d, want the last write's (%d)", got, len(tt.wantCalls))
			}
		})
	}
}

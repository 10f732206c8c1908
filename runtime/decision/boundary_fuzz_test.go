package decision

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// FuzzRequestsStayInTheirCluster sends whole admission requests, every field
// chosen by the fuzzer (the operation, both objects' logical cluster
// annotations, namespace, name, the reference, an intent on the protected
// object, the intent targets a dependent lists), to the reference index and
// the deletion validator of one replica, reading and writing through a
// front-proxy that records what it is sent. Whatever the request says, it
// causes no read or write in any logical cluster but its own: the created
// object's on a CREATE, the stored object's otherwise. A request whose own
// cluster is no logical cluster name causes none at all.
func FuzzRequestsStayInTheirCluster(f *testing.F) {
	const escape = "../../../../../../../../clusters/tenant-b/apis/network.test.io/v1/namespaces/prod/vpcs/core"
	now := strconv.FormatInt(time.Now().Unix(), 10)
	intentOf := func(namespace, name string) string {
		return `{"resource":"virtualmachines.compute.test.io","version":"v1","namespace":"` + namespace + `","name":"` + name + `","at":"` + time.Now().UTC().Format(time.RFC3339) + `"}`
	}
	f.Add(uint8(0), "tenant-a", "", "prod", "evil-1", escape, "", "")
	f.Add(uint8(1), "tenant-b", "tenant-a", "prod", "vm-2", "vpc-2", "", "")
	f.Add(uint8(1), "tenant-a", "tenant-a/../tenant-b", "prod", "vm-2", "vpc-2", "", "")
	f.Add(uint8(2), "tenant-a", "tenant-a", "prod", "vm-2", "vpc-2", "", `[{"group":"network.test.io","version":"v1","resource":"vpcs","name":"`+escape+`"}]`)
	f.Add(uint8(2), "tenant-a", "tenant-a", "prod", "vm-2", "vpc-2", "", `[{"group":"..","version":"..","resource":"..","name":"core"}]`)
	f.Add(uint8(3), "tenant-b", "tenant-a", "prod", "core", "", intentOf("prod", "../../../../clusters/tenant-b/apis/compute.test.io/v1/namespaces/prod/virtualmachines/vm-b"), "")
	f.Add(uint8(3), "tenant-a", "tenant-a", "..", "core", "", intentOf("..", "vm-b"), "")
	f.Add(uint8(4), "tenant-b", "tenant-a", "prod", "core", "", intentOf("prod", "vm-b"), "")
	f.Add(uint8(132), "tenant-a", "", "", "region-1", "vpc-ns", "", "")
	f.Add(uint8(133), "tenant-b", "tenant-a", "", "region-1", "vpc-ns", "", "")
	f.Add(uint8(0), "system:../../clusters/tenant-b", "", "prod", "vm-1", "core", "", "")

	f.Fuzz(func(t *testing.T, op uint8, objCluster, oldCluster, namespace, name, ref, intentValue, intentTargets string) {
		fp := &fakeFrontProxy{clusterScoped: map[string]bool{"tenant-a|regions": true, "tenant-b|regions": true}}
		for _, c := range []string{"tenant-a", "tenant-b"} {
			fp.add(c, vpcGVR, "prod", "core", map[string]interface{}{})
			fp.add(c, vpcGVR, "prod", "vpc-2", map[string]interface{}{})
			fp.add(c, vpcGVR, "vrf-a", "vpc-ns", map[string]interface{}{})
			fp.add(c, vmGVR, "prod", "vm-b", map[string]interface{}{"spec": vpcRef("core")})
		}
		ix, v := boundaryWebhook(t, fp)

		dependent := map[string]string{v1alpha1.IntentTargetsAnnotation: intentTargets}
		protected := map[string]string{v1alpha1.IntentAnnotationPrefix + "0123456789abcdef": intentValue}
		spec := map[string]interface{}{"vpcRef": map[string]interface{}{"name": ref}, "vpc": ref}
		oldSpec := map[string]interface{}{"vpcRef": map[string]interface{}{"name": "old-" + ref}}
		req := &admissionv1.AdmissionRequest{UID: "u", Namespace: namespace, Name: name}
		decide := ix.Decide
		switch op % 6 {
		case 0, 1, 2:
			req.Operation = []admissionv1.Operation{admissionv1.Create, admissionv1.Update, admissionv1.Delete}[op%6]
			req.Resource = metav1.GroupVersionResource(vmGVR)
			if op >= 128 {
				req.Resource = metav1.GroupVersionResource(regionGVR)
			}
			req.Object = object(objCluster, namespace, name, dependent, spec)
			if req.Operation != admissionv1.Create {
				req.OldObject = object(oldCluster, namespace, name, dependent, oldSpec)
				if req.Operation == admissionv1.Delete {
					req.Object.Raw = nil
					// A fresh intent label, so that the deletion
					// withdraws what the dependent lists.
					req.OldObject.Raw = withLabel(req.OldObject.Raw, v1alpha1.IntentLabel, "0123456789abcdef."+now)
				}
			}
		default:
			decide = v.Decide
			req.Operation = []admissionv1.Operation{admissionv1.Delete, admissionv1.Update, admissionv1.Create}[op%6-3]
			req.Resource = metav1.GroupVersionResource(vpcGVR)
			req.Object = object(objCluster, namespace, name, nil, nil)
			req.OldObject = object(oldCluster, namespace, name, protected, nil)
			if req.Operation == admissionv1.Delete {
				req.Object.Raw = nil
			}
			if req.Operation == admissionv1.Create {
				req.OldObject.Raw = nil
			}
		}
		decide(context.Background(), req)

		own := oldCluster
		if req.Operation == admissionv1.Create {
			own = objCluster
		}
		sent := fp.sent()
		if admission.Cluster(own) != nil {
			if len(sent) > 0 {
				t.Fatalf("a request whose logical cluster %q is none was acted on: %v", own, sent)
			}
			return
		}
		onlyIn(t, sent, own)
	})
}

// withLabel returns the object raw with the label key set to value.
func withLabel(raw []byte, key, value string) []byte {
	var obj map[string]interface{}
	_ = json.Unmarshal(raw, &obj)
	md, _ := obj["metadata"].(map[string]interface{})
	md["labels"] = map[string]interface{}{key: value}
	out, _ := json.Marshal(obj)
	return out
}

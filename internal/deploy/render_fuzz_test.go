package deploy

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// FuzzRender feeds arbitrary settings to the renderer, as a Terraform
// configuration could. It must never panic (Validate must catch whatever
// the object builders would choke on), and whatever it accepts must render
// objects with valid names that survive YAML.
func FuzzRender(f *testing.F) {
	f.Add("depctrl-system", "depctrl", "ghcr.io/depctrl/depctrl-runtime", "v1.0.0", int32(9443), "50m", "64Mi", "", "256Mi", "")
	f.Add("", "", "", "", int32(0), "", "", "", "", "https://x.example.com/validate")
	f.Add("a", "b", "c", "d", int32(8080), "1e3", "-1", "0.5", "1Ti", "http://x")
	f.Fuzz(func(t *testing.T, ns, name, image, tag string, port int32, cpuReq, memReq, cpuLim, memLim, url string) {
		c := Config{
			Namespace: ns, Name: name, Image: image, Tag: tag, WebhookPort: port, WebhookURL: url, CreateNamespace: true,
			Controller: Component{Replicas: 1, Kubeconfig: []byte("k"), Resources: Resources{CPURequest: cpuReq, MemoryRequest: memReq, CPULimit: cpuLim, MemoryLimit: memLim}},
			Webhook:    Component{Replicas: 1, Kubeconfig: []byte("k")},
			TLS:        TLS{CACert: []byte("ca"), Cert: []byte("c"), Key: []byte("k")},
		}
		objs, err := Render(c)
		if err != nil {
			return
		}
		for _, o := range objs {
			if errs := validation.IsDNS1123Subdomain(o.GetName()); len(errs) > 0 {
				t.Fatalf("accepted config renders %s %q: %v", o.GetKind(), o.GetName(), errs)
			}
		}
		out, err := YAML(objs)
		if err != nil {
			t.Fatal(err)
		}
		var anything interface{}
		if err := yaml.Unmarshal(out, &anything); err != nil {
			t.Fatalf("rendered YAML does not parse: %v", err)
		}
	})
}

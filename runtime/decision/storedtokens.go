package decision

// The read that lets the index shed the intents of writes already stored
// (index.DependentReader.StoredWith): one cached LIST of the dependents
// that carry those writes' IntentLabel values, instead of a GET of each.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/index"
	"github.com/depctrl/terraform-provider-depctrl/runtime/registry"
)

// StoredWith implements index.DependentReader: of the IntentLabel values
// given, those that a stored dependent of p in namespace carries, with
// that dependent's name and whether it references the object called name
// (one being deleted references nothing). It reads the API server's cache
// (resourceVersion=0): a dependent seen carrying a write's label, at any
// revision, shows that write stored, which is all the caller concludes.
func (f *FrontProxyFinder) StoredWith(ctx context.Context, cluster string, p registry.Protection, namespace string, values []string, name string) (map[string]index.Stored, error) {
	if len(values) == 0 {
		return nil, nil
	}
	path, err := admission.Path(cluster, p.Dependent, namespace, "")
	if err != nil {
		return nil, err
	}
	req, err := labels.NewRequirement(v1alpha1.IntentLabel, selection.In, values)
	if err != nil {
		return nil, fmt.Errorf("selecting the dependents that carry %d intent labels: %w", len(values), err)
	}
	res := path.On(f.raw.Get()).
		Param("labelSelector", labels.NewSelector().Add(*req).String()).
		Param("resourceVersion", "0").
		SetHeader("Accept", "application/json").
		Do(ctx)
	if err := res.Error(); err != nil {
		return nil, fmt.Errorf("listing the %s that carry intent labels: %w", p.Dependent.GroupResource(), err)
	}
	body, _ := res.Raw()
	var list struct {
		Items []map[string]interface{} `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decoding the %s that carry intent labels: %w", p.Dependent.GroupResource(), err)
	}
	out := make(map[string]index.Stored, len(list.Items))
	for _, item := range list.Items {
		md, _ := item["metadata"].(map[string]interface{})
		lbls, _ := md["labels"].(map[string]interface{})
		value, _ := lbls[v1alpha1.IntentLabel].(string)
		if value == "" || !slices.Contains(values, value) {
			continue
		}
		deleting := f.IgnoreDeleting && len(itemDeleting.Values(item)) > 0
		out[value] = index.Stored{Name: first(itemName.Values(item)), References: !deleting && references(item, p.Paths, name)}
	}
	return out, nil
}

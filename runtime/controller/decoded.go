package controller

import (
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// decodedRules keeps each rule decoded as of the resourceVersion it was
// read at, so that a run decodes only the rules that changed since the last
// (with 1 000 rules, decoding all of them twice was a quarter of a run).
type decodedRules map[string]decodedRule

type decodedRule struct {
	resourceVersion string
	// rule is shared between runs: copy it before changing it.
	rule  *v1alpha1.DependencyRule
	err   error
	input RuleInput
}

// get returns o decoded and as planning input.
func (d decodedRules) get(o process.ShardObject) decodedRule {
	key := o.Cluster + "/" + o.Obj.GetName()
	if c, ok := d[key]; ok && c.resourceVersion == o.Obj.GetResourceVersion() && c.resourceVersion != "" {
		return c
	}
	rule, err := decodeRule(o)
	c := decodedRule{resourceVersion: o.Obj.GetResourceVersion(), rule: rule, err: err, input: ruleInput(key, rule, err)}
	d[key] = c
	return c
}

// keep forgets every rule but those in objs.
func (d decodedRules) keep(objs []process.ShardObject) {
	seen := make(map[string]bool, len(objs))
	for _, o := range objs {
		seen[o.Cluster+"/"+o.Obj.GetName()] = true
	}
	for key := range d {
		if !seen[key] {
			delete(d, key)
		}
	}
}

package app

import (
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
)

// tokenField is the Settings part for the Hugging Face token that gated repos need: where the token
// in use comes from, a field to paste one, and Save, which keeps it where the Hub's own tools
// read it. nil when the backend has no Hub.
type tokenField struct {
	h     Backend
	entry *widget.Entry
	state *widget.Label
	save  *widget.Button
}

func newTokenField(u *ui) *tokenField {
	if !u.b.Offers().Hub {
		return nil
	}
	t := &tokenField{h: u.b, entry: widget.NewPasswordEntry(), state: captionLabel("")}
	t.entry.SetPlaceHolder("hf_… (huggingface.co/settings/tokens)")
	t.save = widget.NewButton("Save token", func() {
		token := t.entry.Text
		t.save.Disable()
		u.background("Save the Hugging Face token", func() error {
			path, err := t.h.SaveHubToken(token)
			u.onUI(func() {
				t.save.Enable()
				if err != nil {
					t.state.Importance = widget.DangerImportance
					t.state.SetText(err.Error())
					return
				}
				t.entry.SetText("")
				t.show("Saved in " + path + ". ")
			})
			return err
		})
	})
	t.show("")
	return t
}

// show says which token is in use, after what was just done.
func (t *tokenField) show(done string) {
	t.state.Importance = widget.MediumImportance
	src := t.h.HubTokenSource()
	switch {
	case src == "":
		t.state.SetText(done + "No token: gated repos (those that ask you to accept their terms) cannot be downloaded. Paste one to keep it in the Hub's token file, where its own tools read it too.")
	case src == "the HF_TOKEN environment variable":
		t.state.SetText(done + "In use: the token in " + src + ", which wins over a saved one.")
	default:
		t.state.SetText(done + "In use: the token saved in " + src + ". Save an empty field to remove it.")
	}
}

// item is the form row.
func (t *tokenField) item() *widget.FormItem {
	return widget.NewFormItem("Hugging Face token", container.NewVBox(container.NewBorder(nil, nil, nil, t.save, t.entry), t.state))
}

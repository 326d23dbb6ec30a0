# Installs Llamatray from this unpacked archive.
#
#   make user-install      for you only, under ~/.local (no root needed)
#   sudo make install      for everyone, under /usr/local
#   make user-uninstall    removes what user-install put there
#   sudo make uninstall    removes what install put there
#
# PREFIX and DESTDIR work as usual: make install PREFIX=/opt/llamatray DESTDIR=/tmp/stage

PREFIX  ?= /usr/local
DESTDIR ?=
APP_ID  := io.github.llamatray
ICONS   := $(wildcard share/icons/hicolor/*/apps/$(APP_ID).png)
FILES   := bin/llamatray share/applications/$(APP_ID).desktop share/metainfo/$(APP_ID).metainfo.xml \
           share/man/man1/llamatray.1.gz $(ICONS)
TARGET  := $(DESTDIR)$(PREFIX)
HICOLOR := $(TARGET)/share/icons/hicolor

.PHONY: help install uninstall user-install user-uninstall

help:
	@sed -n '1,9s/^# \{0,1\}//p' Makefile

install:
	@# The archive holds llamatray at its top and the rest as it goes under PREFIX (share/...).
	@for f in $(FILES); do \
	  mode=0644; src=$$f; case $$f in bin/*) mode=0755; src=$${f#bin/};; esac; \
	  install -D -m $$mode "$$src" "$(TARGET)/$$f" || exit 1; \
	  echo "installed $(TARGET)/$$f"; \
	done
	@# The menu entry runs the installed binary even when PREFIX/bin is not in PATH.
	@sed -i 's|^Exec=.*|Exec=$(PREFIX)/bin/llamatray|' "$(TARGET)/share/applications/$(APP_ID).desktop"
	@$(MAKE) --no-print-directory refresh

uninstall:
	@for f in $(FILES); do rm -f "$(TARGET)/$$f" && echo "removed $(TARGET)/$$f"; done
	@$(MAKE) --no-print-directory refresh

user-install:
	@$(MAKE) --no-print-directory install PREFIX="$(HOME)/.local"

user-uninstall:
	@$(MAKE) --no-print-directory uninstall PREFIX="$(HOME)/.local"

# refresh updates an existing GTK icon cache; a stale one would hide the new icons.
.PHONY: refresh
refresh:
	@if [ -f "$(HICOLOR)/icon-theme.cache" ] && command -v gtk-update-icon-cache >/dev/null; then \
	  gtk-update-icon-cache -q -t -f "$(HICOLOR)" || true; fi

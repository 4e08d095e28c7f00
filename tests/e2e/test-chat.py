#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
#
# The real application, driven through accessibility as an assistive
# technology would: type a prompt in "Message", press "Send", read the
# reply, press "Regenerate", cancel the retry that follows when the
# provider fails ("Cancel retry"), then "Edit" the prompt and send it again
# with Ctrl+Enter.
#
# Run by meson under xvfb-run and dbus-run-session (tests/meson.build); it
# starts the accessibility bus and a scripted provider on 127.0.0.1 itself.

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

REPLY = "Hello from the scripted provider"
PROMPT = "Say hello"
BUTTONS = ("push button", "button")


def log(text):
    print("# " + text, flush=True)


def wait_for(what, predicate, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            found = predicate()
        except Exception:
            found = None
        if found:
            return found
        time.sleep(0.25)
    raise AssertionError("timed out waiting for " + what)


def main():
    kaged = os.environ["KAGED_BINARY"]
    fake_provider = os.environ["FAKE_PROVIDER"]
    work = tempfile.mkdtemp(prefix="kaged-e2e-")
    processes = []

    try:
        # dogtail reads this setting through GSettings: a settings file of
        # the test's own, so the application keeps its in-memory settings.
        app_env = dict(os.environ)
        os.environ["GSETTINGS_BACKEND"] = "keyfile"
        os.environ["XDG_CONFIG_HOME"] = os.path.join(work, "config")
        processes.append(subprocess.Popen(["/usr/libexec/at-spi-bus-launcher",
                                           "--launch-immediately"],
                                          stdout=subprocess.DEVNULL))
        subprocess.check_call(["gsettings", "set", "org.gnome.desktop.interface",
                               "toolkit-accessibility", "true"])
        time.sleep(1)

        # A reply, then an overloaded provider: the regenerated reply fails
        # and Tier 2 counts down to a retry.
        scenario = os.path.join(work, "scenario.json")
        with open(scenario, "w") as f:
            json.dump([{"kind": "openai", "text": REPLY, "chunks": 3},
                       {"status": 503, "headers": {"x-should-retry": "false"},
                        "body": "Service Unavailable"}], f)
        provider_log = open(os.path.join(work, "provider.log"), "w+")
        provider = subprocess.Popen([fake_provider, "--port", "0", "--scenario", scenario],
                                    stdout=provider_log, stderr=subprocess.STDOUT)
        processes.append(provider)

        def provider_url():
            provider_log.seek(0)
            match = re.search(r"http://127\.0\.0\.1:\d+", provider_log.read())
            return match.group(0) if match else None

        url = wait_for("the provider", provider_url)
        log("provider at " + url)

        env = app_env
        env.pop("NO_AT_BRIDGE", None)
        env.pop("GTK_A11Y", None)
        app = subprocess.Popen([kaged, "--data-dir", os.path.join(work, "data"),
                                "--provider-kind", "openai", "--provider-url", url,
                                "--model", "test-model"], env=env,
                               stdout=subprocess.DEVNULL)
        processes.append(app)

        from dogtail import config
        config.config.searchShowingOnly = False
        config.config.logDebugToStdOut = False
        config.config.logDebugToFile = False
        from dogtail import rawinput
        from dogtail.tree import root

        def find_app():
            for application in root.applications():
                if "kaged" in (application.name or "").lower():
                    return application
            return None

        application = wait_for("the application on the accessibility bus", find_app)
        log("found " + application.name)

        def find(predicate):
            return application.findChild(predicate, retry=False, requireResult=False)

        def named(name, role=None):
            def predicate(node):
                node_name = node.name or ""
                return ((node_name == name or node_name.startswith(name + " ")
                         or node_name.endswith(" " + name))
                        and (role is None or node.roleName in role))
            return lambda: find(predicate)

        message = wait_for('"Message"', named("Message"))
        log('"Message" is a ' + message.roleName)
        rawinput.typeText(PROMPT)
        wait_for("the prompt in the composer",
                 lambda: PROMPT in (message.text or "") if hasattr(message, "text") else True,
                 timeout=10)

        send = wait_for('"Send"', named("Send", BUTTONS))
        send.doActionNamed("click")
        log("sent")

        def reply_shown():
            return find(lambda node: REPLY in (node.name or "") or REPLY in (node.description or ""))

        wait_for("the reply", reply_shown)
        log("reply shown")

        regenerate = wait_for('"Regenerate"', named("Regenerate", BUTTONS))
        regenerate.doActionNamed("click")
        log("regenerate pressed")

        def cancel_button():
            return find(lambda node: node.roleName in BUTTONS and
                        "cancel retry" in (node.name or "").lower())

        cancel = wait_for('"Cancel retry"', cancel_button)
        log("found " + repr(cancel.name) + ", showing: " + str(cancel.showing))
        def n_requests():
            with urllib.request.urlopen(url + "/__fake/stats") as answer:
                return json.load(answer)["total"]

        cancel.doActionNamed("click")
        before = n_requests()
        log("retry cancelled after %d requests" % before)

        # No retry reaches the provider any more (the countdown was 2 s).
        time.sleep(6)
        after = n_requests()
        if after != before:
            raise AssertionError("%d requests after the retry was cancelled" % (after - before))
        if app.poll() is not None:
            raise AssertionError("the application exited")
        log("no retry after the cancel")

        # Edit the prompt: Ctrl+Enter in the dialog sends the edited text.
        edit = wait_for('"Edit"', named("Edit", BUTTONS))
        edit.doActionNamed("click")
        wait_for('"Edited Message"', named("Edited Message"))
        log("editing")
        rawinput.keyCombo("<Control>End")
        rawinput.typeText(" again")
        rawinput.keyCombo("<Control>Return")

        def edited_shown():
            return find(lambda node: (node.name or "").strip() == PROMPT + " again" or
                        (node.description or "").strip() == PROMPT + " again")

        wait_for("the edited message", edited_shown)
        wait_for("the dialog to close", lambda: find(lambda node: node.name == "Edited Message") is None)
        log("edited message sent with Ctrl+Enter")

        print("1..1")
        print("ok 1 /e2e/send-regenerate-cancel-retry")
        return 0
    except Exception as error:
        print("1..1")
        print("not ok 1 /e2e/send-regenerate-cancel-retry # " + str(error).replace("\n", " "))
        return 1
    finally:
        for process in reversed(processes):
            process.terminate()
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

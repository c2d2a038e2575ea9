/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pam-authtok-test: a PAM module for test-pam only. Its auth asks the conversation for the
 * password and sets PAM_AUTHTOK, as pam_unix does before pam_nsjoin's auth in a real stack
 * (an application may not set PAM_AUTHTOK itself).
 */
#include <stddef.h>

#include <security/pam_ext.h>
#include <security/pam_modules.h>

PAM_EXTERN int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv) {
        const char *tok = NULL;

        return pam_get_authtok(pamh, PAM_AUTHTOK, &tok, NULL) == PAM_SUCCESS && tok ? PAM_SUCCESS
                                                                                    : PAM_AUTH_ERR;
}

PAM_EXTERN int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv) {
        return PAM_SUCCESS;
}

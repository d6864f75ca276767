"""A realistic patient profile and roster, shared by tests, benchmarks and demos.

Values follow the patient entry contract in docs/architecture.md. Callers must copy before
mutating (the sandbox copies on build).
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from benchmark.engine.sandbox.door import Sandbox

EXAMPLE_NOW = datetime(2026, 11, 4, 9, 30, tzinfo=ZoneInfo("America/Chicago"))  # a Wednesday

EXAMPLE_SEED = 20261104

EXAMPLE_PROFILE = {
    "first_name": "Maria",
    "last_name": "Lopez",
    "preferred_name": "Maria",
    "date_of_birth": "1961-04-12",
    "age": 65,
    "sex": "female",
    "gender": "woman",
    "pronouns": "she/her",
    "timezone": "America/Chicago",
    "address": {"street": "12 Oak St", "city": "Austin", "state": "TX", "zip": "78701"},
    "phone": "5125550143",
    "email": "maria.lopez@example.com",
    "emergency_contact": {"name": "Luis Lopez", "relationship": "son", "phone": "5125550199"},
    "caregiver": None,
    "insurance": {"provider": "Blue Cross Blue Shield", "plan_type": "PPO"},
    "preferred_pharmacy": {
        "name": "CVS Pharmacy",
        "address": "600 W 6th St, Austin, TX 78701",
        "phone": "5125550100",
    },
    "conditions": ["Type 2 diabetes", "Chronic kidney disease stage 3", "Hypertension"],
    "medications": [
        {
            "name": "Metformin",
            "dosage": "500 mg",
            "frequency": "twice daily",
            "status": "active",
            "refills_remaining": 2,
            "last_filled": "2026-10-01",
            "pharmacy": "CVS Pharmacy",
        },
        {
            "name": "Lisinopril",
            "dosage": "10 mg",
            "frequency": "once daily",
            "status": "active",
            "refills_remaining": 0,
            "last_filled": "2026-10-12",
            "pharmacy": "CVS Pharmacy",
        },
        {
            "name": "Atorvastatin",
            "dosage": "20 mg",
            "frequency": "once daily at bedtime",
            "status": "under_renewal",
            "refills_remaining": 1,
            "last_filled": "2026-09-20",
            "pharmacy": "CVS Pharmacy",
        },
        {
            "name": "Glipizide",
            "dosage": "5 mg",
            "frequency": "once daily with breakfast",
            "status": "past",
            "refills_remaining": 0,
            "last_filled": "2025-12-02",
            "pharmacy": "CVS Pharmacy",
        },
    ],
    "allergies": ["penicillin"],
}

EXAMPLE_ENTRY = {
    "patient_profile": EXAMPLE_PROFILE,
    "patient_story": (
        "Maria Lopez is a 65-year-old woman with type 2 diabetes, stage 3 chronic kidney "
        "disease and hypertension. Over the past week her home blood pressure readings have "
        "crept up to the 150s systolic, and she realised she has run out of refills for her "
        "blood pressure pill. She is worried that her kidneys are getting worse and would "
        "prefer to see her primary care doctor in person this week."
    ),
    "scenario_complexity": "chronic",
}


def _office(number: int, name: str, street: str, phone: str, hours: str) -> dict:
    return {
        "id": f"office-{number}",
        "name": name,
        "address": f"{street}, Austin, TX 78701",
        "phone": phone,
        "hours": hours,
    }


def _provider(number: int, name: str, specialty: str, credentials: str, office: int) -> dict:
    return {
        "id": f"dr-{number:02d}",
        "name": name,
        "specialty": specialty,
        "credentials": credentials,
        "office_id": f"office-{office}",
    }


EXAMPLE_ROSTER = {
    "offices": [
        _office(
            1, "Riverside Primary Care", "410 Congress Ave", "5125550110", "Mon-Fri 8:00-17:00"
        ),
        _office(2, "Eastside Family Health", "1800 E 7th St", "5125550120", "Mon-Fri 7:30-16:30"),
        _office(
            3, "Capitol Heart and Vascular", "901 Lavaca St", "5125550130", "Mon-Fri 8:00-17:00"
        ),
        _office(
            4,
            "Hill Country Specialty Clinic",
            "2200 S Lamar Blvd",
            "5125550140",
            "Mon-Thu 8:00-18:00",
        ),
    ],
    "providers": [
        _provider(1, "Priya Patel", "Family Medicine", "MD", 1),
        _provider(2, "James Whitaker", "Internal Medicine", "DO", 1),
        _provider(3, "Ana Ruiz", "Family Medicine", "MD", 2),
        _provider(4, "Kevin Osei", "Internal Medicine", "MD", 2),
        _provider(5, "Helen Park", "Cardiology", "MD, FACC", 3),
        _provider(6, "Samuel Greene", "Cardiology", "MD", 3),
        _provider(7, "Laura Chen", "Endocrinology", "MD", 4),
        _provider(8, "Michael Brandt", "Nephrology", "MD", 4),
        _provider(9, "Rosa Delgado", "Psychiatry", "MD", 4),
        _provider(10, "Daniel Kim", "Gastroenterology", "MD", 4),
        _provider(11, "Grace Holloway", "Geriatric Medicine", "MD", 2),
        _provider(12, "Omar Haddad", "Pulmonology", "MD", 3),
    ],
}


def build_example_sandbox(seed: int = EXAMPLE_SEED) -> Sandbox:
    """A fresh sandbox for the example patient and roster."""
    return Sandbox.build(EXAMPLE_PROFILE, EXAMPLE_ROSTER, seed, EXAMPLE_NOW)

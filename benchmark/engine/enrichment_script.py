"""Offline enrichment script: builds a patient entry from the seed by fixed rules.

Not a model. Everything is derived from `hints["seed"]` with a random.Random seeded from the
seed's canonical JSON, so the same seed always gives the same entry in any process.

The entry keeps the seed's sex, age and condition. For a seed that breaks an eligibility rule
on purpose that keeps the contradiction, and the case is labelled infeasible; every other
seed is plausible by construction and is never labelled so.

Behaviours: any behaviour answers with a valid entry, except "malformed-once", which first
answers with truncated JSON and only gives the valid entry on the repair turn. That exercises
the repair path in tests and in the demo.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from llm.engine.chat import ChatRequest, ChatResponse, Usage

MALFORMED_ONCE = "malformed-once"

Medication = tuple[str, str, str]  # name, dosage, frequency


@dataclass(frozen=True)
class ConditionNote:
    """What the script knows about conditions matching any of `keywords`."""

    keywords: tuple[str, ...]
    specialist: str
    symptoms: str
    medications: tuple[Medication, ...]


# The tables below are hand-aligned reference data; keep the formatter out of them.
# fmt: off
NOTES = (
    ConditionNote(("type 2 diabetes",), "endocrinologist",
                  "rising fasting glucose readings, more thirst and afternoon fatigue",
                  (("Metformin", "1000 mg", "twice daily"),
                   ("Empagliflozin", "10 mg", "once daily"),
                   ("Semaglutide", "0.5 mg injection", "once weekly"))),
    ConditionNote(("type 1 diabetes",), "endocrinologist",
                  "erratic glucose readings with two low-sugar episodes overnight",
                  (("Insulin lispro", "per pump settings", "continuous via insulin pump"),
                   ("Insulin glargine", "18 units", "at bedtime when off the pump"),
                   ("Glucagon nasal powder", "3 mg", "as needed for severe lows"))),
    ConditionNote(("pregnancy", "gestational diabetes"), "obstetrician",
                  "fasting glucose readings above target and new swelling in the feet",
                  (("Insulin NPH", "10 units", "at bedtime"),
                   ("Prenatal multivitamin", "1 tablet", "once daily"),
                   ("Aspirin", "81 mg", "once daily"))),
    ConditionNote(("prediabetes",), "endocrinologist",
                  "an A1c that has crept upward and heavy tiredness after meals",
                  (("Metformin", "500 mg", "once daily with dinner"),)),
    ConditionNote(("hypertension",), "cardiologist",
                  "morning headaches and home blood pressure readings in the 150s",
                  (("Lisinopril", "20 mg", "once daily"),
                   ("Amlodipine", "5 mg", "once daily"),
                   ("Hydrochlorothiazide", "25 mg", "once daily"))),
    ConditionNote(("hyperlipidemia",), "cardiologist",
                  "a cholesterol panel well above goal and muscle aches blamed on the statin",
                  (("Atorvastatin", "40 mg", "once nightly"),
                   ("Ezetimibe", "10 mg", "once daily"))),
    ConditionNote(("eskd", "dialysis"), "nephrologist",
                  "cramping and exhaustion after dialysis sessions and trouble keeping fluid "
                  "weight down",
                  (("Sevelamer carbonate", "800 mg", "three times daily with meals"),
                   ("Calcitriol", "0.25 mcg", "once daily"),
                   ("Cinacalcet", "30 mg", "once daily"))),
    ConditionNote(("kidney transplant",), "nephrologist",
                  "a creatinine that has risen on two checks and a new tremor in the hands",
                  (("Tacrolimus", "2 mg", "twice daily"),
                   ("Mycophenolate mofetil", "500 mg", "twice daily"),
                   ("Prednisone", "5 mg", "once daily"))),
    ConditionNote(("kidney disease", "nephritis"), "nephrologist",
                  "ankle swelling, foamy urine and a creatinine that keeps climbing",
                  (("Losartan", "50 mg", "once daily"),
                   ("Furosemide", "20 mg", "once daily"),
                   ("Sodium bicarbonate", "650 mg", "twice daily"))),
    ConditionNote(("hypothyroidism",), "endocrinologist",
                  "weight gain, always feeling cold and slowed thinking",
                  (("Levothyroxine", "75 mcg", "once daily before breakfast"),)),
    ConditionNote(("graves",), "endocrinologist",
                  "palpitations, heat intolerance, a fine tremor and weight loss",
                  (("Methimazole", "10 mg", "once daily"),
                   ("Propranolol", "20 mg", "twice daily"))),
    ConditionNote(("asthma",), "pulmonologist",
                  "night-time coughing, wheezing with exercise and more frequent rescue "
                  "inhaler use",
                  (("Albuterol HFA", "90 mcg, 2 puffs", "every 4-6 hours as needed"),
                   ("Fluticasone-salmeterol", "250/50 mcg, 1 inhalation", "twice daily"),
                   ("Montelukast", "10 mg", "once nightly"))),
    ConditionNote(("nicotine",), "pulmonologist",
                  "a heavy morning cough and no success cutting back on cigarettes",
                  (("Nicotine patch", "21 mg/24 h", "once daily"),
                   ("Varenicline", "1 mg", "twice daily"))),
    ConditionNote(("copd",), "pulmonologist",
                  "more breathlessness on stairs and a cough with thicker sputum",
                  (("Tiotropium", "18 mcg inhaled", "once daily"),
                   ("Budesonide-formoterol", "160/4.5 mcg, 2 puffs", "twice daily"),
                   ("Albuterol HFA", "90 mcg, 2 puffs", "every 4-6 hours as needed"))),
    ConditionNote(("heart failure",), "cardiologist",
                  "swelling in both legs, a three-pound weight gain in a few days and needing "
                  "extra pillows to breathe at night",
                  (("Sacubitril-valsartan", "49/51 mg", "twice daily"),
                   ("Metoprolol succinate", "50 mg", "once daily"),
                   ("Furosemide", "40 mg", "once daily"),
                   ("Spironolactone", "25 mg", "once daily"))),
    ConditionNote(("atrial fibrillation",), "cardiologist",
                  "episodes of a racing, irregular heartbeat with lightheadedness",
                  (("Apixaban", "5 mg", "twice daily"),
                   ("Diltiazem ER", "180 mg", "once daily"))),
    ConditionNote(("coronary artery",), "cardiologist",
                  "chest tightness when walking uphill that eases with rest",
                  (("Aspirin", "81 mg", "once daily"),
                   ("Clopidogrel", "75 mg", "once daily"),
                   ("Atorvastatin", "80 mg", "once nightly"),
                   ("Nitroglycerin", "0.4 mg sublingual", "as needed for chest pain"))),
    ConditionNote(("stroke",), "neurologist",
                  "brief spells of word-finding trouble and weakness in one hand",
                  (("Aspirin", "81 mg", "once daily"),
                   ("Clopidogrel", "75 mg", "once daily"),
                   ("Atorvastatin", "80 mg", "once nightly"))),
    ConditionNote(("peripheral artery",), "vascular specialist",
                  "calf cramping after walking a block that eases with rest",
                  (("Cilostazol", "100 mg", "twice daily"),
                   ("Aspirin", "81 mg", "once daily"),
                   ("Atorvastatin", "40 mg", "once nightly"))),
    ConditionNote(("deep vein thrombosis",), "hematologist",
                  "persistent swelling and aching in the affected calf",
                  (("Rivaroxaban", "20 mg", "once daily with the evening meal"),)),
    ConditionNote(("gerd",), "gastroenterologist",
                  "burning chest discomfort after meals, a sour taste at night and morning "
                  "hoarseness",
                  (("Omeprazole", "20 mg", "once daily before breakfast"),
                   ("Famotidine", "20 mg", "at bedtime"),
                   ("Calcium carbonate", "500 mg", "as needed for heartburn"))),
    ConditionNote(("irritable bowel",), "gastroenterologist",
                  "cramping abdominal pain with alternating diarrhea and constipation",
                  (("Dicyclomine", "20 mg", "up to four times daily as needed"),
                   ("Psyllium fiber", "1 teaspoon", "once daily"))),
    ConditionNote(("crohn",), "gastroenterologist",
                  "frequent loose stools, cramping low on the right and weight loss",
                  (("Adalimumab", "40 mg injection", "every other week"),
                   ("Budesonide", "9 mg", "once daily"))),
    ConditionNote(("ulcerative colitis",), "gastroenterologist",
                  "bloody diarrhea several times a day with urgency",
                  (("Mesalamine", "2.4 g", "once daily"),
                   ("Prednisone", "20 mg", "once daily, tapering"))),
    ConditionNote(("celiac",), "gastroenterologist",
                  "bloating, diarrhea and fatigue after accidental gluten exposure",
                  (("Ferrous sulfate", "325 mg", "once daily"),
                   ("Vitamin D3", "2000 IU", "once daily"))),
    ConditionNote(("fatty liver",), "hepatologist",
                  "dull right upper abdominal discomfort and raised liver enzymes on recent labs",
                  (("Vitamin E", "400 IU", "once daily"),
                   ("Atorvastatin", "20 mg", "once nightly"))),
    ConditionNote(("hepatitis",), "hepatologist",
                  "fatigue, dark urine and a detectable viral load on the latest test",
                  (("Sofosbuvir-velpatasvir", "400/100 mg", "once daily"),)),
    ConditionNote(("depression",), "psychiatrist",
                  "low mood, early waking, loss of interest and poor concentration",
                  (("Sertraline", "100 mg", "once daily"),
                   ("Bupropion XL", "150 mg", "once daily"),
                   ("Trazodone", "50 mg", "at bedtime as needed for sleep"))),
    ConditionNote(("anxiety",), "psychiatrist",
                  "constant worry, a pounding heart and trouble falling asleep",
                  (("Escitalopram", "10 mg", "once daily"),
                   ("Hydroxyzine", "25 mg", "as needed for anxiety"))),
    ConditionNote(("bipolar",), "psychiatrist",
                  "several nights of little sleep, racing thoughts and impulsive spending",
                  (("Lithium carbonate", "300 mg", "three times daily"),
                   ("Quetiapine", "100 mg", "at bedtime"))),
    ConditionNote(("schizophrenia",), "psychiatrist",
                  "hearing voices again and growing suspicion of neighbours",
                  (("Paliperidone palmitate", "156 mg injection", "once monthly"),
                   ("Benztropine", "1 mg", "twice daily"))),
    ConditionNote(("ptsd", "insomnia"), "psychiatrist",
                  "nightmares, startling easily and only three to four hours of sleep a night",
                  (("Prazosin", "2 mg", "at bedtime"),
                   ("Sertraline", "50 mg", "once daily"))),
    ConditionNote(("adhd",), "psychiatrist",
                  "trouble finishing tasks, losing things and falling behind at school or work",
                  (("Methylphenidate ER", "36 mg", "once daily in the morning"),
                   ("Guanfacine ER", "1 mg", "once daily"))),
    ConditionNote(("autism",), "psychiatrist",
                  "more meltdowns, disrupted sleep and distress at changes in routine",
                  (("Melatonin", "3 mg", "at bedtime"),
                   ("Risperidone", "0.5 mg", "once daily"))),
    ConditionNote(("opioid",), "addiction medicine specialist",
                  "strong cravings and withdrawal symptoms whenever a dose is late",
                  (("Buprenorphine-naloxone", "8/2 mg film", "once daily"),
                   ("Naloxone nasal spray", "4 mg", "as needed for overdose"))),
    ConditionNote(("alcohol",), "addiction medicine specialist",
                  "cravings in the evenings, poor sleep and shaky hands in the mornings",
                  (("Naltrexone", "50 mg", "once daily"),
                   ("Thiamine", "100 mg", "once daily"))),
    ConditionNote(("migraine", "headache"), "neurologist",
                  "throbbing one-sided headaches with visual zigzags, nausea and light "
                  "sensitivity",
                  (("Sumatriptan", "50 mg", "as needed at headache onset"),
                   ("Topiramate", "50 mg", "twice daily"),
                   ("Ondansetron", "4 mg", "as needed for nausea"))),
    ConditionNote(("epilepsy",), "neurologist",
                  "two breakthrough seizures this month and brief staring spells",
                  (("Levetiracetam", "750 mg", "twice daily"),
                   ("Lamotrigine", "100 mg", "twice daily"))),
    ConditionNote(("parkinson",), "neurologist",
                  "a worsening tremor, stiffness and shorter, shuffling steps",
                  (("Carbidopa-levodopa", "25/100 mg", "three times daily"),
                   ("Pramipexole", "0.25 mg", "three times daily"))),
    ConditionNote(("dementia",), "neurologist",
                  "more forgetfulness, repeated questions and getting lost on familiar routes",
                  (("Donepezil", "10 mg", "at bedtime"),
                   ("Memantine", "10 mg", "twice daily"))),
    ConditionNote(("multiple sclerosis",), "neurologist",
                  "tingling in both legs, blurred vision in one eye and heavy fatigue",
                  (("Ocrelizumab", "600 mg infusion", "every six months"),
                   ("Baclofen", "10 mg", "three times daily"))),
    ConditionNote(("neuropathy",), "neurologist",
                  "burning pain and numbness in both feet that is worse at night",
                  (("Gabapentin", "300 mg", "three times daily"),
                   ("Duloxetine", "60 mg", "once daily"))),
    ConditionNote(("rheumatoid", "psoria"), "rheumatologist",
                  "morning stiffness lasting over an hour and swollen finger joints",
                  (("Methotrexate", "15 mg", "once weekly"),
                   ("Folic acid", "1 mg", "once daily"),
                   ("Adalimumab", "40 mg injection", "every other week"))),
    ConditionNote(("lupus",), "rheumatologist",
                  "joint pain, a rash across the cheeks, puffy eyelids and deep fatigue",
                  (("Hydroxychloroquine", "200 mg", "twice daily"),
                   ("Mycophenolate mofetil", "1000 mg", "twice daily"),
                   ("Prednisone", "10 mg", "once daily"))),
    ConditionNote(("osteoarthritis", "back pain"), "orthopedic specialist",
                  "pain that worsens with stairs or sitting and stiffness after rest",
                  (("Meloxicam", "15 mg", "once daily"),
                   ("Acetaminophen", "500 mg", "every 6 hours as needed"),
                   ("Diclofenac 1% gel", "4 g", "four times daily"))),
    ConditionNote(("gout",), "rheumatologist",
                  "a hot, swollen big-toe joint that flared overnight",
                  (("Allopurinol", "300 mg", "once daily"),
                   ("Colchicine", "0.6 mg", "as needed for flares"))),
    ConditionNote(("fibromyalgia",), "rheumatologist",
                  "widespread aching, unrefreshing sleep and brain fog",
                  (("Duloxetine", "60 mg", "once daily"),
                   ("Cyclobenzaprine", "5 mg", "at bedtime"))),
    ConditionNote(("osteoporosis",), "endocrinologist",
                  "new upper back pain and a loss of height noticed at a recent visit",
                  (("Alendronate", "70 mg", "once weekly"),
                   ("Calcium with vitamin D", "600 mg/400 IU", "twice daily"))),
    ConditionNote(("dermatitis", "eczema", "urticaria"), "dermatologist",
                  "itchy, inflamed skin that disturbs sleep and has spread over two weeks",
                  (("Triamcinolone 0.1% cream", "thin layer", "twice daily"),
                   ("Cetirizine", "10 mg", "once daily"))),
    ConditionNote(("acne",), "dermatologist",
                  "painful cystic breakouts on the face and badly cracked, dry lips",
                  (("Isotretinoin", "40 mg", "twice daily"),
                   ("Adapalene 0.1% gel", "thin layer", "once nightly"))),
    ConditionNote(("iron-deficiency anemia", "anemia"), "hematologist",
                  "tiredness, breathlessness on stairs and pale, cold hands",
                  (("Ferrous sulfate", "325 mg", "once daily"),
                   ("Vitamin C", "500 mg", "once daily with the iron"))),
    ConditionNote(("sickle cell",), "hematologist",
                  "recurring pain crises in the back and legs and growing fatigue",
                  (("Hydroxyurea", "1000 mg", "once daily"),
                   ("Folic acid", "1 mg", "once daily"),
                   ("Oxycodone", "5 mg", "every 6 hours as needed for severe pain"))),
    ConditionNote(("urinary tract",), "urologist",
                  "burning with urination, urgency and lower abdominal pressure",
                  (("Nitrofurantoin", "100 mg", "twice daily for 5 days"),
                   ("Methenamine hippurate", "1 g", "twice daily"))),
    ConditionNote(("prostatic hyperplasia",), "urologist",
                  "a weak stream and waking three times a night to urinate",
                  (("Tamsulosin", "0.4 mg", "at bedtime"),
                   ("Finasteride", "5 mg", "once daily"))),
    ConditionNote(("prostate cancer",), "oncologist",
                  "fatigue, hot flashes and new aching in the hips",
                  (("Leuprolide", "22.5 mg injection", "every three months"),
                   ("Bicalutamide", "50 mg", "once daily"))),
    ConditionNote(("breast cancer",), "oncologist",
                  "hot flashes, joint aches and worry about a new lump under the arm",
                  (("Tamoxifen", "20 mg", "once daily"),
                   ("Venlafaxine XR", "37.5 mg", "once daily"))),
    ConditionNote(("colon cancer",), "oncologist",
                  "a change in bowel habits and dread ahead of the surveillance colonoscopy",
                  (("Loperamide", "2 mg", "as needed for diarrhea"),)),
    ConditionNote(("polycystic ovary",), "gynecologist",
                  "irregular periods, acne along the jaw and difficulty losing weight",
                  (("Metformin", "500 mg", "twice daily"),
                   ("Norgestimate-ethinyl estradiol", "1 tablet", "once daily"),
                   ("Spironolactone", "50 mg", "once daily"))),
    ConditionNote(("menopause",), "gynecologist",
                  "hot flashes several times a night, poor sleep and mood swings",
                  (("Estradiol patch", "0.05 mg", "twice weekly"),
                   ("Progesterone", "100 mg", "at bedtime"))),
    ConditionNote(("endometriosis",), "gynecologist",
                  "severe pelvic pain around periods and pain with bowel movements",
                  (("Norethindrone acetate", "5 mg", "once daily"),
                   ("Ibuprofen", "600 mg", "every 6 hours as needed"))),
    ConditionNote(("hiv",), "infectious disease specialist",
                  "new night sweats after a week of missed doses",
                  (("Bictegravir-emtricitabine-tenofovir alafenamide", "50/200/25 mg",
                    "once daily"),)),
    ConditionNote(("sleep apnea",), "sleep medicine specialist",
                  "loud snoring, witnessed pauses in breathing and heavy daytime sleepiness",
                  (("Modafinil", "100 mg", "once daily in the morning"),)),
    ConditionNote(("obesity",), "endocrinologist",
                  "slow progress with weight loss and nausea since the last dose increase",
                  (("Semaglutide", "1 mg injection", "once weekly"),
                   ("Ondansetron", "4 mg", "as needed for nausea"))),
    ConditionNote(("allergic rhinitis", "sinusitis"), "allergist",
                  "congestion, facial pressure, sneezing and itchy eyes",
                  (("Fluticasone nasal spray", "50 mcg, 2 sprays per nostril", "once daily"),
                   ("Loratadine", "10 mg", "once daily"))),
    ConditionNote(("glaucoma",), "ophthalmologist",
                  "eye ache and halos around lights at night",
                  (("Latanoprost 0.005% drops", "1 drop each eye", "at bedtime"),
                   ("Timolol 0.5% drops", "1 drop each eye", "twice daily"))),
    ConditionNote(("macular degeneration",), "ophthalmologist",
                  "wavy lines when reading and a blurry spot in the centre of vision",
                  (("AREDS2 eye vitamins", "1 capsule", "twice daily"),
                   ("Aflibercept", "2 mg eye injection", "every eight weeks"))),
    ConditionNote(("long covid",), "pulmonologist",
                  "crushing fatigue after small exertion, brain fog and a racing heart when "
                  "standing",
                  (("Propranolol", "10 mg", "twice daily"),
                   ("Melatonin", "3 mg", "at bedtime"))),
)
FALLBACK_NOTE = ConditionNote(
    (), "specialist", "symptoms that have become harder to manage day to day",
    (("Acetaminophen", "500 mg", "every 6 hours as needed"),
     ("Vitamin D3", "1000 IU", "once daily"),
     ("Multivitamin", "1 tablet", "once daily")),
)

URGENT_SUBCATEGORIES = ("emergency_symptoms", "mental_health_crisis", "medication_interaction")
FIRST_NAMES = {
    "woman": ("Maria", "Aisha", "Emily", "Grace", "Sofia", "Hannah", "Priya", "Mei", "Olivia",
              "Fatima", "Rosa", "Linda", "Chloe", "Nadia", "Ruth", "Keisha"),
    "man": ("James", "Luis", "Daniel", "Omar", "Ethan", "Wei", "Marcus", "Samuel", "Arjun",
            "Noah", "Robert", "Diego", "Kwame", "Henry", "Tyler", "Ivan"),
    "non-binary": ("Alex", "Jordan", "Riley", "Sam", "Casey", "Quinn", "Avery", "Rowan",
                   "Skyler", "Jamie"),
}
LAST_NAMES = ("Lopez", "Johnson", "Nguyen", "Patel", "Okafor", "Kim", "Garcia", "Smith",
              "Cohen", "Williams", "Haddad", "Martinez", "Brown", "Singh", "Rossi", "Chen",
              "Jackson", "Novak", "Ali", "Murphy")
PRONOUNS = {"woman": ("she/her", "her"), "man": ("he/him", "his"),
            "non-binary": ("they/them", "their")}
DESCRIPTORS = {"woman": ("girl", "woman"), "man": ("boy", "man"),
               "non-binary": ("child", "non-binary adult")}
CITIES = (  # city, state, zip, time zone, area code
    ("Austin", "TX", "78701", "America/Chicago", "512"),
    ("Denver", "CO", "80202", "America/Denver", "303"),
    ("Seattle", "WA", "98101", "America/Los_Angeles", "206"),
    ("Phoenix", "AZ", "85004", "America/Phoenix", "602"),
    ("Atlanta", "GA", "30303", "America/New_York", "404"),
    ("Chicago", "IL", "60601", "America/Chicago", "312"),
    ("Columbus", "OH", "43215", "America/New_York", "614"),
    ("Boston", "MA", "02108", "America/New_York", "617"),
    ("Nashville", "TN", "37203", "America/Chicago", "615"),
    ("Portland", "OR", "97205", "America/Los_Angeles", "503"),
    ("Minneapolis", "MN", "55401", "America/Chicago", "612"),
    ("Charlotte", "NC", "28202", "America/New_York", "704"),
    ("Albuquerque", "NM", "87102", "America/Denver", "505"),
    ("Sacramento", "CA", "95814", "America/Los_Angeles", "916"),
    ("Pittsburgh", "PA", "15222", "America/New_York", "412"),
    ("Miami", "FL", "33130", "America/New_York", "305"),
)
STREETS = ("Oak St", "Maple Ave", "Cedar Ln", "Park Blvd", "Lakeview Dr", "Hillcrest Rd",
           "Elm St", "Washington Ave", "Sunset Dr", "Willow Way")
PHARMACIES = ("CVS Pharmacy", "Walgreens", "Rite Aid", "Walmart Pharmacy", "Kroger Pharmacy",
              "Costco Pharmacy")
ALLERGIES = ("penicillin", "sulfa drugs", "latex", "shellfish", "peanuts", "codeine",
             "ibuprofen", "amoxicillin")
INSURANCE = {
    "pediatric": (("Medicaid", "CHIP"), ("Blue Cross Blue Shield", "PPO"), ("Aetna", "HMO")),
    "senior": (("Medicare", "Medicare Advantage"), ("Medicare", "Original Medicare")),
    "adult": (("Blue Cross Blue Shield", "PPO"), ("Aetna", "HMO"), ("UnitedHealthcare", "EPO"),
              ("Cigna", "PPO"), ("Kaiser Permanente", "HMO"), ("Medicaid", "Managed Care"),
              ("Self Pay", "none")),
}
RELATIVES = {
    "pediatric": ("mother", "father"),
    "young_adult": ("mother", "partner", "sibling"),
    "middle_aged": ("spouse", "partner", "sibling"),
    "senior": ("daughter", "son", "spouse"),
}
# Conditions that leave an older adult relying on someone else for care.
DEPENDENT_CARE = ("dementia", "alzheimer", "parkinson")

SEVERITY = {  # how it is now, how long it has been going, how it is changing
    "mild": ("mild but persistent", "three weeks",
             "though daily activities are mostly unaffected"),
    "moderate": ("moderately severe and interfering with daily routines", "ten days",
                 "with little relief from the usual routine"),
    "severe": ("severe and getting worse quickly", "three days",
               "and the symptoms have escalated noticeably since yesterday"),
}
TASKS = {
    "symptom_assessment": "{name} wants help deciding whether these symptoms need to be seen "
    "soon or can be managed at home",
    "emergency_symptoms": "This morning {name} developed sudden shortness of breath at rest, "
    "dizziness and chest pressure, and is frightened that something serious is happening",
    "mental_health_crisis": "In recent days {name} has felt hopeless and overwhelmed and has had "
    "passing thoughts of not wanting to be alive",
    "chronic_condition_follow_up": "{name} is due for a follow-up and wants to review whether the "
    "current treatment plan is still working",
    "test_results_question": "{name} saw new lab results in the patient portal and wants to "
    "understand what they mean for {poss} treatment",
    "refill": "{name} is almost out of {medication} and needs a refill sent to {poss} usual "
    "pharmacy before the weekend",
    "medication_interaction": "{name} was offered an over-the-counter cold remedy and wants to "
    "know whether it is safe to take with {medication}",
    "new_prescription": "{name} wonders whether a new prescription could help, since the current "
    "regimen no longer keeps the symptoms under control",
    "side_effects": "{name} suspects {medication} is causing nausea and dizziness and is unsure "
    "whether to keep taking it",
    "dosage_question": "{name} is unsure how and when to take {medication} after a recent dose "
    "change",
    "scheduling": "{name} wants to book a visit to go over these symptoms with a clinician",
    "specialist_referral": "{name} would like a referral to a {specialist} because primary care "
    "management has not settled things",
    "change_pcp": "{name} wants to switch to a different primary care physician who is easier "
    "to reach",
    "reschedule_or_cancel": "{name} has an upcoming appointment that now clashes with another "
    "commitment and needs to move or cancel it",
    "pharmacy": "{name} now lives closer to a different pharmacy and wants {poss} prescriptions "
    "transferred there",
    "insurance": "{name} has changed insurance plans and needs the new coverage on file before "
    "the next visit",
    "contact_details": "{name} has a new phone number and wants {poss} contact details updated "
    "so that results are not missed",
    "hospital_discharge_follow_up": "{name} left the hospital a few days ago and needs a "
    "follow-up visit and a review of the discharge medications",
    "caregiver_coordination": "{name}'s family wants to coordinate appointments and medication "
    "pickups so that nothing falls through the cracks",
    "records_and_forms": "{name} needs medical records and a completed school or work form sent "
    "before a deadline later this week",
}
FALLBACK_TASK = "{name} needs help with a {subcategory} request about {poss} care"
PERSONALITIES = {
    "cooperative": "{name} is calm and willing to follow advice but would like a clear plan",
    "anxious": "{name} is very worried that this could be serious and keeps searching the "
    "symptoms online",
    "terse": "{name} is frustrated with the process and wants a quick answer without much "
    "back-and-forth",
    "stoic": "{name} tends to play down the discomfort and only reached out because family "
    "insisted",
    "skeptical": "{name} doubts that an automated assistant can help and expects well-reasoned "
    "answers",
    "confused": "{name} finds the medication names and instructions hard to keep straight and "
    "may mix up details",
}
FALLBACK_PERSONALITY = "{name} would like the issue resolved soon"
CARE_PREFERENCES = {
    "in_person": "{name} would prefer to be examined in person at the clinic rather than over "
    "video or by message",
    "remote": "{name} would rather handle this through a telehealth visit or a secure message "
    "than travel to the office",
    "urgent_call": "{name} wants to speak with a clinician by phone or video today rather than "
    "wait for a routine appointment",
    "no_preference": "{name} has no strong preference about how to be seen, as long as the "
    "issue is addressed soon",
}
FALLBACK_CARE_PREFERENCE = CARE_PREFERENCES["no_preference"]
# fmt: on


def respond(request: ChatRequest, behaviour: str) -> ChatResponse:
    seed = request.hints["seed"]
    today = date.fromisoformat(request.hints["today"])
    text = json.dumps(build_entry(seed, today), indent=2)
    if behaviour == MALFORMED_ONCE and not request.hints.get("repair"):
        text = text[: len(text) // 2]
    prompt = request.system + "".join(message.content for message in request.messages)
    return ChatResponse(
        text=text,
        usage=Usage(input_tokens=len(prompt) // 4, output_tokens=len(text) // 4),
        model=request.model,
    )


def build_entry(seed: dict[str, Any], today: date) -> dict[str, Any]:
    rng = random.Random(json.dumps(seed, sort_keys=True))
    condition = seed["condition"].lower()
    notes = matching_notes(condition)
    profile = _profile(seed, today, rng, notes)
    return {
        "patient_profile": profile,
        "patient_story": _story(seed, profile, notes[0], rng),
        "scenario_complexity": scenario_complexity(seed),
    }


def matching_notes(condition: str) -> list[ConditionNote]:
    """Notes for every keyword in the condition, the one mentioned first leading."""
    found = []
    for note in NOTES:
        positions = [condition.find(keyword) for keyword in note.keywords if keyword in condition]
        if positions:
            found.append((min(positions), note))
    return [note for _, note in sorted(found, key=lambda pair: pair[0])] or [FALLBACK_NOTE]


def scenario_complexity(seed: dict[str, Any]) -> str:
    """Infeasible exactly when the seed breaks an eligibility rule on purpose (its profile
    keeps the seed's sex, age and condition, so the contradiction stays in the case)."""
    if seed.get("broken_rule"):
        return "infeasible"
    condition = seed["condition"].lower()
    comorbid = " with " in condition or " and " in condition
    if comorbid or seed["severity"] == "severe" or seed["task_subcategory"] in URGENT_SUBCATEGORIES:
        return "complicated"
    # A single condition: mild enough to handle as one issue, otherwise ongoing management.
    return "regular" if seed["severity"] == "mild" else "chronic"


def _profile(
    seed: dict[str, Any], today: date, rng: random.Random, notes: list[ConditionNote]
) -> dict[str, Any]:
    gender = _gender_key(seed)
    first, last = rng.choice(FIRST_NAMES[gender]), rng.choice(LAST_NAMES)
    city, state, zip_code, timezone, area = rng.choice(CITIES)
    pharmacy = rng.choice(PHARMACIES)
    relative = _relative(seed["age_group"], last, rng)
    return {
        "first_name": first,
        "last_name": last,
        "preferred_name": first,
        "date_of_birth": _birth_date(seed["age"], today, rng).isoformat(),
        "age": seed["age"],
        "sex": seed["sex"],
        "gender": seed["gender"],
        "pronouns": PRONOUNS[gender][0],
        "timezone": timezone,
        "address": {"street": _street(rng), "city": city, "state": state, "zip": zip_code},
        "phone": _phone(area, rng),
        "email": f"{first}.{last}{rng.randint(1, 99)}@example.com".lower(),
        "emergency_contact": {**relative, "phone": _phone(area, rng)},
        "caregiver": relative if _needs_caregiver(seed) else None,
        "insurance": dict(
            zip(("provider", "plan_type"), _insurance(seed["age_group"], rng), strict=True)
        ),
        "preferred_pharmacy": {
            "name": pharmacy,
            "address": f"{_street(rng)}, {city}, {state} {zip_code}",
            "phone": _phone(area, rng),
        },
        "conditions": _conditions(seed["condition"]),
        "medications": _medications(notes, pharmacy, today, rng),
        "allergies": rng.sample(ALLERGIES, rng.choice((0, 0, 1, 1, 2))),
    }


def _birth_date(age: int, today: date, rng: random.Random) -> date:
    """A birthday that makes the patient exactly `age` today."""
    try:
        latest = today.replace(year=today.year - age)
    except ValueError:  # today is 29 February and that year has none
        latest = today.replace(year=today.year - age, day=28)
    return latest - timedelta(days=rng.randint(0, 364))


def _street(rng: random.Random) -> str:
    return f"{rng.randint(10, 9899)} {rng.choice(STREETS)}"


def _phone(area_code: str, rng: random.Random) -> str:
    return f"{area_code}5550{rng.randint(100, 199)}"  # 555-01xx numbers are never assigned


def _relative(age_group: str, last_name: str, rng: random.Random) -> dict[str, str]:
    relationship = rng.choice(RELATIVES.get(age_group, RELATIVES["middle_aged"]))
    first = rng.choice(FIRST_NAMES["woman"] + FIRST_NAMES["man"])
    return {"name": f"{first} {last_name}", "relationship": relationship}


def _needs_caregiver(seed: dict[str, Any]) -> bool:
    condition = seed["condition"].lower()
    return seed["age"] < 18 or any(keyword in condition for keyword in DEPENDENT_CARE)


def _insurance(age_group: str, rng: random.Random) -> tuple[str, str]:
    return rng.choice(INSURANCE.get(age_group, INSURANCE["adult"]))


def _conditions(condition: str) -> list[str]:
    """Split a comorbid condition into its parts: "A with B and C" -> [A, B, C]."""
    parts = condition.replace(" and ", " with ").split(" with ")
    return [part.strip()[0].upper() + part.strip()[1:] for part in parts if part.strip()]


def _medications(
    notes: list[ConditionNote], pharmacy: str, today: date, rng: random.Random
) -> list[dict[str, Any]]:
    candidates = list(
        {
            name: (name, dosage, frequency)
            for note in notes + [FALLBACK_NOTE]
            for name, dosage, frequency in note.medications
        }.values()
    )
    chosen = candidates[: rng.choice((2, 3, 4, 4, 5, 5, 5))]  # mean 4
    return [
        _medication(medication, "active" if position == 0 else _status(rng), pharmacy, today, rng)
        for position, medication in enumerate(chosen)
    ]


def _status(rng: random.Random) -> str:
    return rng.choices(("active", "under_renewal", "past"), weights=(70, 15, 15))[0]


def _medication(
    medication: Medication, status: str, pharmacy: str, today: date, rng: random.Random
) -> dict[str, Any]:
    name, dosage, frequency = medication
    days_ago = rng.randint(120, 400) if status == "past" else rng.randint(3, 60)
    return {
        "name": name,
        "dosage": dosage,
        "frequency": frequency,
        "status": status,
        "refills_remaining": rng.randint(0, 5) if status == "active" else 0,
        "last_filled": (today - timedelta(days=days_ago)).isoformat(),
        "pharmacy": pharmacy,
    }


def _story(
    seed: dict[str, Any], profile: dict[str, Any], note: ConditionNote, rng: random.Random
) -> str:
    name, poss = profile["first_name"], PRONOUNS[_gender_key(seed)][1]
    now, duration, change = SEVERITY.get(seed["severity"], SEVERITY["moderate"])
    child, adult = DESCRIPTORS[_gender_key(seed)]
    descriptor = child if seed["age"] < 18 else adult
    active = next(m["name"] for m in profile["medications"] if m["status"] == "active")
    facts = {
        "name": name,
        "poss": poss,
        "medication": active,
        "specialist": note.specialist,
        "subcategory": seed["task_subcategory"].replace("_", " "),
    }
    active_names = " and ".join(
        m["name"] for m in profile["medications"][:2] if m["status"] == "active"
    )
    opening = (
        f"{name} is a {seed['age']}-year-old {descriptor} with "
        f"{_as_phrase(seed['condition'])}, treated with {active_names}, and {poss} "
        f"condition is currently {now}"
    )
    if profile["caregiver"]:
        opening += f"; {poss} {profile['caregiver']['relationship']} helps manage {poss} care"
    sentences = [
        opening,
        f"Over the past {duration} {name} has had {note.symptoms} despite following the plan "
        f"from {poss} {note.specialist}, {change}",
        TASKS.get(seed["task_subcategory"], FALLBACK_TASK).format(**facts),
        PERSONALITIES.get(seed["personality"], FALLBACK_PERSONALITY).format(**facts),
        CARE_PREFERENCES.get(seed["care_preference"], FALLBACK_CARE_PREFERENCE).format(**facts),
    ]
    if rng.random() < 0.3:  # vary the length: some stories leave the temperament implicit
        del sentences[3]
    return " ".join(sentence + "." for sentence in sentences)


def _gender_key(seed: dict[str, Any]) -> str:
    return seed["gender"] if seed["gender"] in PRONOUNS else "non-binary"


def _as_phrase(condition: str) -> str:
    """Lower-case the first word for use mid-sentence, except acronyms and eponyms."""
    first_word = condition.split(" ")[0]
    if first_word[1:].islower() and "'" not in first_word:
        return condition[0].lower() + condition[1:]
    return condition
